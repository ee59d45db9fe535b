import { ApiProperty } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsEmail, IsString, MaxLength, MinLength } from 'class-validator';
import { DisplayNameField } from '../../common/validators';
import { MaxPasswordBytes, normalizeEmail } from '../../accounts/dto/user.dto';
import { OrganizationResponse } from '../../accounts/dto/organization.dto';
import { UserResponse } from '../../accounts/dto/user.dto';

export class TokenRequestDto {
  @ApiProperty({ example: 'admin@example.com' })
  @Transform(normalizeEmail)
  @IsEmail({}, { message: 'email must be an email address' })
  @MaxLength(254)
  email: string;

  @ApiProperty()
  @IsString()
  @MinLength(1)
  @MaxLength(200)
  password: string;
}

export class SignupDto {
  @DisplayNameField({ example: 'Acme Robotics' })
  organization_name: string;

  @ApiProperty({ example: 'founder@acme.test' })
  @Transform(normalizeEmail)
  @IsEmail({}, { message: 'email must be an email address' })
  @MaxLength(254)
  email: string;

  @ApiProperty({ minLength: 8, maxLength: 72 })
  @IsString()
  @MinLength(8)
  @MaxPasswordBytes()
  password: string;

  @DisplayNameField({ example: 'Ada Founder' })
  name: string;
}

export class AccessTokenResponse {
  @ApiProperty() access_token: string;
  @ApiProperty({ enum: ['Bearer'] }) token_type: 'Bearer';
  @ApiProperty({ type: 'integer', description: 'Seconds until the token expires.', example: 900 })
  expires_in: number;
}

export class SignupResponse extends AccessTokenResponse {
  @ApiProperty({ type: OrganizationResponse }) organization: OrganizationResponse;
  @ApiProperty({ type: UserResponse }) user: UserResponse;
}
