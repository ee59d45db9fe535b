import {
  Body,
  Controller,
  Headers,
  HttpCode,
  Post,
  Req,
  UseGuards,
  type RawBodyRequest,
} from '@nestjs/common';
import {
  ApiAcceptedResponse,
  ApiBody,
  ApiHeader,
  ApiOkResponse,
  ApiOperation,
  ApiTags,
} from '@nestjs/swagger';
import type { Request } from 'express';
import { Public } from '../access/route-access.decorators';
import type { RequestOrigin } from '../audit/audit.service';
import { Origin } from '../audit/request-origin.decorator';
import { ApiProblems } from '../common/openapi';
import {
  GitHubReportedToken,
  GitHubTokenLabel,
  RevokeCredentialsDto,
  RevokeCredentialsResponse,
} from './dto/secret-scanning.dto';
import { RevokeRateLimitGuard } from './revoke-rate-limit.guard';
import { SecretScanningService } from './secret-scanning.service';

@ApiTags('leaked keys')
@Controller('v1')
export class SecretScanningController {
  constructor(private readonly scanning: SecretScanningService) {}

  // Public: GitHub presents no credential; the signature over the raw body is the check.
  @Post('secret-scanning/github')
  @Public()
  @HttpCode(200)
  @ApiOperation({
    summary: "GitHub secret scanning: a signed report of this service's key values found in public",
    description:
      'GitHub posts the values matching the registered pattern, signed (ECDSA P-256, SHA-256, DER, base64) ' +
      'over the raw body with a key published at SECRET_SCANNING_KEYS_URL. Each value that names a key gets ' +
      "its organization's leak_response and a `key.leaked` record (once per key and source URL).",
  })
  @ApiHeader({
    name: 'Github-Public-Key-Identifier',
    required: true,
    description: 'Which published key signed.',
  })
  @ApiHeader({
    name: 'Github-Public-Key-Signature',
    required: true,
    description: 'Base64 of the DER ECDSA signature of the raw body.',
  })
  @ApiBody({ type: [GitHubReportedToken] })
  @ApiOkResponse({ type: [GitHubTokenLabel], description: 'One label per reported token, in order.' })
  @ApiProblems(400, 401, 503)
  github(
    @Req() request: RawBodyRequest<Request>,
    @Headers('github-public-key-identifier') keyIdentifier: string | undefined,
    @Headers('github-public-key-signature') signature: string | undefined,
    @Origin() origin: RequestOrigin,
  ): Promise<GitHubTokenLabel[]> {
    return this.scanning.github(request.rawBody, request.body, { keyIdentifier, signature }, origin);
  }

  // Public on purpose: whoever finds a key can report it. 202 whatever the values, so it is no oracle.
  @Post('credentials/revoke')
  @Public()
  @UseGuards(RevokeRateLimitGuard)
  @HttpCode(202)
  @ApiOperation({
    summary: 'Report key values found in public; each that names an active key gets its leak_response',
    description:
      'Anyone may call it. It answers 202 whatever the values are, once the report is stored (the same work ' +
      'whether a value names a key or not); the keys are looked up and their leak_response applied after the ' +
      'answer, so it tells nothing about any of them. Limited per client address ' +
      '(CREDENTIAL_REVOKE_REQUESTS_PER_MINUTE).',
  })
  @ApiAcceptedResponse({ type: RevokeCredentialsResponse })
  @ApiProblems(400, 429)
  async revoke(
    @Body() dto: RevokeCredentialsDto,
    @Origin() origin: RequestOrigin,
  ): Promise<RevokeCredentialsResponse> {
    await this.scanning.publicReport(dto.credentials, origin);
    return { received: dto.credentials.length };
  }
}
