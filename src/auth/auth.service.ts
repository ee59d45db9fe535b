import { ConfigOf } from '../config/config-namespace';
import { authConfig } from '../config/namespaces';
import { Inject, Injectable } from '@nestjs/common';
import { OrganizationResponse } from '../accounts/dto/organization.dto';
import { UserResponse } from '../accounts/dto/user.dto';
import { OrganizationsService } from '../accounts/organizations.service';
import { PasswordHasher } from '../accounts/password-hasher';
import type { User } from '../accounts/user.entity';
import { UsersService } from '../accounts/users.service';
import { AuthError, AuthErrorCode } from './auth.errors';
import { AccessTokenService, IssuedAccessToken } from './access-token.service';
import { SignupDto, SignupResponse, TokenRequestDto } from './dto/auth.dto';
import { LoginAttemptLimiter } from './login-attempt-limiter';

@Injectable()
export class AuthService {
  constructor(
    @Inject(authConfig.KEY) private readonly config: ConfigOf<typeof authConfig>,
    private readonly users: UsersService,
    private readonly passwords: PasswordHasher,
    private readonly tokens: AccessTokenService,
    private readonly organizations: OrganizationsService,
    private readonly limiter: LoginAttemptLimiter,
  ) {}

  /** Email + password to an access token. */
  async issueToken(dto: TokenRequestDto, clientAddress: string): Promise<IssuedAccessToken> {
    return this.tokens.issue(await this.authenticate(dto, clientAddress));
  }

  /**
   * The active user with this email and password, behind the login-attempt limiter: every sign-in
   * (tokens, dashboard sessions) goes through here. One answer for every failure, so emails cannot be
   * probed.
   */
  async authenticate(dto: TokenRequestDto, clientAddress: string): Promise<User> {
    await this.limiter.assertAllowed(dto.email, clientAddress);
    const user = await this.users.findByEmail(dto.email);
    const valid = await this.passwords.verify(dto.password, user?.passwordHash);
    if (!user || !valid || !user.active) {
      await this.limiter.recordFailure(dto.email, clientAddress);
      throw new AuthError(AuthErrorCode.InvalidCredentials, 'The email or password is incorrect.');
    }
    await this.limiter.recordSuccess(dto.email, clientAddress);
    return user;
  }

  async signup(dto: SignupDto): Promise<SignupResponse> {
    // Closed signup answers like a route that does not exist.
    if (!this.config.allowSignup)
      throw new AuthError(AuthErrorCode.SignupDisabled, 'The resource was not found.');
    const { organization, user } = await this.organizations.createWithAdministrator({
      organizationName: dto.organization_name,
      email: dto.email,
      password: dto.password,
      name: dto.name,
    });
    return {
      organization: OrganizationResponse.of(organization),
      user: UserResponse.of(user),
      ...this.tokens.issue(user),
    };
  }
}
