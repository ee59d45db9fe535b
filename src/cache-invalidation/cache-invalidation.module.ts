import { Global, Module } from '@nestjs/common';
import { InvalidationBus } from './invalidation-bus';

@Global()
@Module({ providers: [InvalidationBus], exports: [InvalidationBus] })
export class CacheInvalidationModule {}
