import { Global, Module } from '@nestjs/common';
import { Secrets } from './secrets';

/** Global, like the configuration it reads: every module that seals, signs or hashes injects `Secrets`. */
@Global()
@Module({ providers: [Secrets], exports: [Secrets] })
export class SecretsModule {}
