import { Module, OnModuleInit } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { TasksModule } from '../../tasks/tasks.module';
import { DeliveryTargets } from '../../webhooks/delivery-targets';
import { WebhooksModule } from '../../webhooks/webhooks.module';
import { A2aPushConfig } from './a2a-push-config.entity';
import { A2aPushConfigs } from './a2a-push-configs';
import { A2aPushDeliveries } from './a2a-push-deliveries';

/**
 * A2A push notifications: the configs (A2aPushConfigs, for the A2A endpoint) and their delivery, a
 * target of the webhook worker (A2aPushDeliveries). Loaded by the API and the worker process alike, so
 * deliveries are made wherever the webhook worker runs.
 */
@Module({
  imports: [TypeOrmModule.forFeature([A2aPushConfig]), TasksModule, WebhooksModule],
  providers: [A2aPushConfigs, A2aPushDeliveries],
  exports: [A2aPushConfigs],
})
export class A2aPushModule implements OnModuleInit {
  constructor(
    private readonly targets: DeliveryTargets,
    private readonly deliveries: A2aPushDeliveries,
  ) {}

  onModuleInit(): void {
    this.targets.register(this.deliveries);
  }
}
