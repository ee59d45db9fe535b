import { Global, Module } from '@nestjs/common';
import { SafeHttpClient } from './safe-http-client';

@Global()
@Module({ providers: [SafeHttpClient], exports: [SafeHttpClient] })
export class OutboundModule {}
