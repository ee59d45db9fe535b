import { Controller, Get, Module } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import type { NextFunction, Request, Response } from 'express';
import request from 'supertest';
import { AfterApiRoutes } from './after-api-routes';

@Controller()
class PingController {
  @Get('ping')
  ping(): { ok: boolean } {
    return { ok: true };
  }
}

@Module({ controllers: [PingController], providers: [AfterApiRoutes] })
class PingModule {}

describe('AfterApiRoutes', () => {
  it("puts its layers behind the API's routes and in front of the 404 handler", async () => {
    const app = (await Test.createTestingModule({ imports: [PingModule] }).compile()).createNestApplication({
      logger: false,
    });
    const seen: string[] = [];
    app.get(AfterApiRoutes).add(() =>
      app.use((req: Request, res: Response, next: NextFunction) => {
        seen.push(req.path);
        if (req.path === '/late') res.json({ late: true });
        else next();
      }),
    );
    await app.init();
    try {
      const server = app.getHttpServer();
      expect((await request(server).get('/ping')).body).toEqual({ ok: true });
      expect((await request(server).get('/late')).body).toEqual({ late: true });
      expect((await request(server).get('/nowhere')).status).toBe(404);
      // The API route answered before the layer; the layer saw the rest, before the 404.
      expect(seen).toEqual(['/late', '/nowhere']);
      expect(() => app.get(AfterApiRoutes).add(() => undefined)).toThrow(/initialised already/);
    } finally {
      await app.close();
    }
  });
});
