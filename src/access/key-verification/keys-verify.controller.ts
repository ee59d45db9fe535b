import { Body, Controller, HttpCode, Post } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import { VerifyKeyDto, VerifyKeyResponse } from '../../api-keys/dto/verify-key.dto';
import { Principal } from '../principal';
import { Operation } from '../route-access.decorators';
import { KeyVerificationService } from './key-verification.service';

@ApiTags('api-keys')
@Controller('v1/keys')
export class KeysVerifyController {
  constructor(private readonly verification: KeyVerificationService) {}

  // 200 for every outcome of the presented key; the caller's own credential failing is still 401/403.
  @Post('verify')
  @HttpCode(200)
  @Operation(
    'api_keys:verify',
    'Verify a key your caller presented, for your own services',
    VerifyKeyResponse,
    400,
  )
  verify(@Principal() principal: Principal, @Body() body: VerifyKeyDto): Promise<VerifyKeyResponse> {
    return this.verification.verify(principal, body);
  }
}
