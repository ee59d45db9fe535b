import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsBoolean, IsEmail, IsOptional, IsString, MaxLength, MinLength, ValidateBy } from 'class-validator';
import { Omittable, DisplayNameField, RoleNameField } from '../../common/validators';
import { ListQueryDto } from '../../common/pagination';
import type { User } from '../user.entity';

export const normalizeEmail = ({ value }: { value: unknown }): unknown =>
  typeof value === 'string' ? value.trim().toLowerCase() : value;

/**
 * bcrypt reads only the first 72 bytes of a password, so a longer one would be silently truncated (and
 * any suffix would match). Counted in UTF-8 bytes: 72 characters can be up to 288 bytes.
 */
export const MaxPasswordBytes = (): PropertyDecorator =>
  ValidateBy({
    name: 'maxPasswordBytes',
    validator: {
      validate: (value: unknown) => typeof value !== 'string' || Buffer.byteLength(value, 'utf8') <= 72,
      defaultMessage: (args) => `${args?.property ?? 'password'} must be at most 72 bytes (UTF-8)`,
    },
  });

export class CreateUserDto {
  @ApiProperty({ example: 'dev@example.com', maxLength: 254 })
  @Transform(normalizeEmail)
  @IsEmail({}, { message: 'email must be an email address' })
  @MaxLength(254)
  email: string;

  @ApiProperty({
    minLength: 8,
    maxLength: 72,
    description: 'bcrypt reads at most 72 bytes, so longer is refused.',
  })
  @IsString()
  @MinLength(8)
  @MaxPasswordBytes()
  password: string;

  @DisplayNameField({ example: 'Dana Developer' })
  name: string;

  @RoleNameField()
  role: string;
}

export class UpdateUserDto {
  @DisplayNameField({ optional: true })
  name?: string;

  @RoleNameField({ optional: true })
  role?: string;

  @ApiPropertyOptional({ minLength: 8, maxLength: 72 })
  @Omittable()
  @IsString()
  @MinLength(8)
  @MaxPasswordBytes()
  password?: string;
}

export class ListUsersQueryDto extends ListQueryDto {
  @ApiPropertyOptional()
  @IsOptional()
  @Transform(({ value }) => (value === 'true' ? true : value === 'false' ? false : value))
  @IsBoolean()
  active?: boolean;
}

export class UserResponse {
  @ApiProperty({ example: 'usr_0Fq3Vn7Kc2Hx9Tp4Rm8Wd1' }) id: string;
  @ApiProperty() email: string;
  @ApiProperty() name: string;
  @ApiProperty({ example: 'developer' }) role: string;
  @ApiProperty() active: boolean;
  @ApiProperty({ type: String, format: 'date-time', nullable: true }) deactivated_at: string | null;
  @ApiProperty({ format: 'date-time' }) created_at: string;
  @ApiProperty({ format: 'date-time' }) updated_at: string;

  static of(user: User): UserResponse {
    return {
      id: user.id,
      email: user.email,
      name: user.name,
      role: user.role,
      active: user.active,
      deactivated_at: user.deactivatedAt?.toISOString() ?? null,
      created_at: user.createdAt.toISOString(),
      updated_at: user.updatedAt.toISOString(),
    };
  }
}

export class UserPage {
  @ApiProperty({ type: [UserResponse] }) data: UserResponse[];
  @ApiProperty({ type: String, nullable: true }) next_cursor: string | null;
}
