import { Global, Module } from '@nestjs/common';
import { InvalidationBus } from './invalidation-bus';
import { InvalidationTransport } from './invalidation-transport';

@Global()
@Module({ providers: [InvalidationBus, InvalidationTransport], exports: [InvalidationBus] })
export class CacheInvalidationModule {}
