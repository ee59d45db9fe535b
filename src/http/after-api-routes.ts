import { Injectable, type OnModuleInit } from '@nestjs/common';

/**
 * Express layers that belong behind the API's routes. Express tries its layers in order on every
 * request, so a layer in front of the API (Swagger UI's documents and static files: seven of them) costs
 * every API request a path match for nothing. Nest adds the routes in `app.init()` before it calls the
 * modules' onModuleInit hooks, and its 404 handler after them (what @nestjs/serve-static relies on for
 * the dashboard): what is added here lands between the two.
 */
@Injectable()
export class AfterApiRoutes implements OnModuleInit {
  private readonly pending: (() => void)[] = [];
  private registered = false;

  /** Adds layers when the app initialises; before `app.init()` only, since after it they would sit behind the 404 handler. */
  add(register: () => void): void {
    if (this.registered)
      throw new Error('AfterApiRoutes.add: the app is initialised already; call it before app.init().');
    this.pending.push(register);
  }

  onModuleInit(): void {
    this.registered = true;
    for (const register of this.pending) register();
  }
}
