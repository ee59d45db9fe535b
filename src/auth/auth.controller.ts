import { Body, Controller, HttpCode, Post, Req } from '@nestjs/common';
import { ApiCreatedResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { Request } from 'express';
import { Public } from '../access/route-access.decorators';
import { ApiProblems } from '../common/openapi';
import { ReturnsSecret } from '../common/returns-secret.decorator';
import { AuthService } from './auth.service';
import { AccessTokenResponse, SignupDto, SignupResponse, TokenRequestDto } from './dto/auth.dto';

@ApiTags('auth')
@Controller('v1/auth')
export class AuthController {
  constructor(private readonly auth: AuthService) {}

  @Post('token')
  @Public()
  @HttpCode(200)
  @ReturnsSecret()
  @ApiOperation({ summary: 'Exchange email and password for a short-lived access token' })
  @ApiOkResponse({ type: AccessTokenResponse })
  @ApiProblems(400, 401, 429)
  token(@Body() dto: TokenRequestDto, @Req() request: Request): Promise<AccessTokenResponse> {
    return this.auth.issueToken(dto, request.ip ?? 'unknown');
  }

  @Post('signup')
  @Public()
  @ReturnsSecret()
  @ApiOperation({ summary: 'Create an organization with its first administrator (when ALLOW_SIGNUP=true)' })
  @ApiCreatedResponse({ type: SignupResponse })
  @ApiProblems(400, 404, 409)
  signup(@Body() dto: SignupDto): Promise<SignupResponse> {
    return this.auth.signup(dto);
  }
}
