import { Module } from '@nestjs/common';
import { ServiceIndexController } from './service-index.controller';

/** `GET /` (ServiceIndexController): its own module so AppModule can register it after the API's routes. */
@Module({ controllers: [ServiceIndexController] })
export class ServiceIndexModule {}
