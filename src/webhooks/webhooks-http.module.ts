import { Module } from '@nestjs/common';
import { WebhooksController } from './webhooks.controller';
import { WebhooksModule } from './webhooks.module';

/** The webhooks API (/v1/webhooks) over WebhooksModule. */
@Module({
  imports: [WebhooksModule],
  controllers: [WebhooksController],
})
export class WebhooksHttpModule {}
