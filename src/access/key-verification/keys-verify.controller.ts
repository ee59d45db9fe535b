import { Body, Controller, Header, HttpCode, Post, Req } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import type { Request } from 'express';
import { VerifyKeyDto, VerifyKeyResponse } from '../../api-keys/dto/verify-key.dto';
import { Operation } from '../route-access.decorators';
import { KeyVerificationService } from './key-verification.service';

@ApiTags('api-keys')
@Controller('v1/keys')
export class KeysVerifyController {
  constructor(private readonly verification: KeyVerificationService) {}

  // 200 for every outcome of the presented key; the caller's own credential failing is still 401/403.
  // The answer comes serialized (KeyVerificationService.verify); the principal is read from the request
  // rather than through @Principal(), whose parameter would go through the global pipes as well.
  @Post('verify')
  @HttpCode(200)
  @Operation(
    'api_keys:verify',
    'Verify a key your caller presented, for your own services',
    VerifyKeyResponse,
    400,
  )
  @Header('Content-Type', 'application/json; charset=utf-8')
  verify(@Req() request: Request, @Body() body: VerifyKeyDto): Promise<string> {
    return this.verification.verify(request.principal!, body, request.res!, request.socket);
  }
}
