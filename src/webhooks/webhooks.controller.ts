import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post, Query } from '@nestjs/common';
import {
  ApiAcceptedResponse,
  ApiCreatedResponse,
  ApiNoContentResponse,
  ApiOkResponse,
  ApiOperation,
  ApiTags,
} from '@nestjs/swagger';
import { RequestOrigin } from '../audit/audit.service';
import { Origin } from '../audit/request-origin.decorator';
import { Principal } from '../access/principal';
import { ApiProblems } from '../common/openapi';
import { ReturnsSecret } from '../common/returns-secret.decorator';
import { ListQueryDto, mapPage } from '../common/pagination';
import { RequirePermissions } from '../access/route-access.decorators';
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
  @RequirePermissions('webhooks:create')
  @ReturnsSecret()
  @ApiOperation({ summary: 'Register an endpoint; the signing secret is in this response only' })
  @ApiCreatedResponse({ type: WebhookWithSecretResponse })
  @ApiProblems(400)
  async create(
    @Principal() principal: Principal,
    @Body() dto: CreateWebhookDto,
    @Origin() origin: RequestOrigin,
  ): Promise<WebhookWithSecretResponse> {
    const { webhook, secret } = await this.webhooks.create(principal, dto, origin);
    return { ...WebhookResponse.of(webhook), secret };
  }

  @Get()
  @RequirePermissions('webhooks:read')
  @ApiOperation({ summary: "List the organization's endpoints" })
  @ApiOkResponse({ type: WebhookPage })
  @ApiProblems(400)
  async list(@Principal() principal: Principal, @Query() query: ListQueryDto): Promise<WebhookPage> {
    return mapPage(await this.webhooks.list(principal, query), WebhookResponse.of);
  }

  @Get(':id')
  @RequirePermissions('webhooks:read')
  @ApiOperation({ summary: 'Get an endpoint' })
  @ApiOkResponse({ type: WebhookResponse })
  @ApiProblems(404)
  async get(@Principal() principal: Principal, @Param('id') id: string): Promise<WebhookResponse> {
    return WebhookResponse.of(await this.webhooks.get(principal, id));
  }

  @Patch(':id')
  @RequirePermissions('webhooks:update')
  @ApiOperation({ summary: 'Change url, events, description or enabled' })
  @ApiOkResponse({ type: WebhookResponse })
  @ApiProblems(400, 404)
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
  @RequirePermissions('webhooks:update')
  @ReturnsSecret()
  @ApiOperation({
    summary: 'Issue a new signing secret (returned once); deliveries sign with it from now on',
  })
  @ApiOkResponse({ type: WebhookWithSecretResponse })
  @ApiProblems(404)
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
  @RequirePermissions('webhooks:delete')
  @ApiOperation({ summary: 'Delete an endpoint and its deliveries' })
  @ApiNoContentResponse()
  @ApiProblems(404)
  async delete(
    @Principal() principal: Principal,
    @Param('id') id: string,
    @Origin() origin: RequestOrigin,
  ): Promise<void> {
    await this.webhooks.delete(principal, id, origin);
  }

  @Get(':id/deliveries')
  @RequirePermissions('webhooks:read')
  @ApiOperation({
    summary: 'Deliveries to this endpoint, newest first: status, attempts, response code, next attempt',
  })
  @ApiOkResponse({ type: DeliveryPage })
  @ApiProblems(400, 404)
  async deliveries(
    @Principal() principal: Principal,
    @Param('id') id: string,
    @Query() query: ListQueryDto,
  ): Promise<DeliveryPage> {
    return mapPage(await this.webhooks.listDeliveries(principal, id, query), DeliveryResponse.of);
  }

  @Post(':id/deliveries/:deliveryId/retry')
  @HttpCode(202)
  @RequirePermissions('webhooks:update')
  @ApiOperation({ summary: 'Send a delivery again now' })
  @ApiAcceptedResponse({ type: DeliveryResponse })
  @ApiProblems(404, 409)
  async retry(
    @Principal() principal: Principal,
    @Param('id') id: string,
    @Param('deliveryId') deliveryId: string,
  ): Promise<DeliveryResponse> {
    return DeliveryResponse.of(await this.webhooks.retryDelivery(principal, id, deliveryId));
  }

  @Post(':id/test')
  @HttpCode(202)
  @RequirePermissions('webhooks:update')
  @ApiOperation({ summary: 'Send a ping event to this endpoint' })
  @ApiAcceptedResponse({ type: DeliveryResponse })
  @ApiProblems(404)
  async test(@Principal() principal: Principal, @Param('id') id: string): Promise<DeliveryResponse> {
    return DeliveryResponse.of(await this.webhooks.ping(principal, id));
  }
}
