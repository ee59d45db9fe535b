import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post, Query } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import { RequestOrigin } from '../audit/audit.service';
import { Origin } from '../audit/request-origin.decorator';
import { Principal } from '../access/principal';
import { ReturnsSecret } from '../common/returns-secret.decorator';
import { ListQueryDto, mapPage } from '../common/pagination';
import { Accepted, Created, NoContent, Operation } from '../access/route-access.decorators';
import {
  CreateWebhookDto,
  DeliveryPage,
  DeliveryResponse,
  UpdateWebhookDto,
  WebhookPage,
  WebhookResponse,
  WebhookWithSecretResponse,
} from './dto/webhook.dto';
import { WebhooksService } from './webhooks.service';

@ApiTags('webhooks')
@Controller('v1/webhooks')
export class WebhooksController {
  constructor(private readonly webhooks: WebhooksService) {}

  @Post()
  @Operation(
    'webhooks:create',
    'Register an endpoint; the signing secret is in this response only',
    Created(WebhookWithSecretResponse),
    400,
  )
  @ReturnsSecret()
  async create(
    @Principal() principal: Principal,
    @Body() dto: CreateWebhookDto,
    @Origin() origin: RequestOrigin,
  ): Promise<WebhookWithSecretResponse> {
    const { webhook, secret } = await this.webhooks.create(principal, dto, origin);
    return { ...WebhookResponse.of(webhook), secret };
  }

  @Get()
  @Operation('webhooks:read', "List the organization's endpoints", WebhookPage, 400)
  async list(@Principal() principal: Principal, @Query() query: ListQueryDto): Promise<WebhookPage> {
    return mapPage(await this.webhooks.list(principal, query), WebhookResponse.of);
  }

  @Get(':id')
  @Operation('webhooks:read', 'Get an endpoint', WebhookResponse, 404)
  async get(@Principal() principal: Principal, @Param('id') id: string): Promise<WebhookResponse> {
    return WebhookResponse.of(await this.webhooks.get(principal, id));
  }

  @Patch(':id')
  @Operation('webhooks:update', 'Change url, events, description or enabled', WebhookResponse, 400, 404)
  async update(
    @Principal() principal: Principal,
    @Param('id') id: string,
    @Body() dto: UpdateWebhookDto,
    @Origin() origin: RequestOrigin,
  ): Promise<WebhookResponse> {
    return WebhookResponse.of(await this.webhooks.update(principal, id, dto, origin));
  }

  @Post(':id/rotate-secret')
  @HttpCode(200)
  @Operation(
    'webhooks:update',
    'Issue a new signing secret (returned once); deliveries sign with it from now on',
    WebhookWithSecretResponse,
    404,
  )
  @ReturnsSecret()
  async rotateSecret(
    @Principal() principal: Principal,
    @Param('id') id: string,
    @Origin() origin: RequestOrigin,
  ): Promise<WebhookWithSecretResponse> {
    const { webhook, secret } = await this.webhooks.rotateSecret(principal, id, origin);
    return { ...WebhookResponse.of(webhook), secret };
  }

  @Delete(':id')
  @HttpCode(204)
  @Operation('webhooks:delete', 'Delete an endpoint and its deliveries', NoContent, 404)
  async delete(
    @Principal() principal: Principal,
    @Param('id') id: string,
    @Origin() origin: RequestOrigin,
  ): Promise<void> {
    await this.webhooks.delete(principal, id, origin);
  }

  @Get(':id/deliveries')
  @Operation(
    'webhooks:read',
    'Deliveries to this endpoint, newest first: status, attempts, response code, next attempt',
    DeliveryPage,
    400,
    404,
  )
  async deliveries(
    @Principal() principal: Principal,
    @Param('id') id: string,
    @Query() query: ListQueryDto,
  ): Promise<DeliveryPage> {
    return mapPage(await this.webhooks.listDeliveries(principal, id, query), DeliveryResponse.of);
  }

  @Post(':id/deliveries/:deliveryId/retry')
  @HttpCode(202)
  @Operation('webhooks:update', 'Send a delivery again now', Accepted(DeliveryResponse), 404, 409)
  async retry(
    @Principal() principal: Principal,
    @Param('id') id: string,
    @Param('deliveryId') deliveryId: string,
  ): Promise<DeliveryResponse> {
    return DeliveryResponse.of(await this.webhooks.retryDelivery(principal, id, deliveryId));
  }

  @Post(':id/test')
  @HttpCode(202)
  @Operation('webhooks:update', 'Send a ping event to this endpoint', Accepted(DeliveryResponse), 404)
  async test(@Principal() principal: Principal, @Param('id') id: string): Promise<DeliveryResponse> {
    return DeliveryResponse.of(await this.webhooks.ping(principal, id));
  }
}
