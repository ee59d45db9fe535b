import { Module } from '@nestjs/common';
import { UsageCounter } from './usage-counter';

@Module({ providers: [UsageCounter], exports: [UsageCounter] })
export class UsageModule {}
