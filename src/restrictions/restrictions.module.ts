import { Module } from '@nestjs/common';
import { RestrictionsGuard } from './restrictions.guard';

@Module({ providers: [RestrictionsGuard], exports: [RestrictionsGuard] })
export class RestrictionsModule {}
