import { TypeOrmModule } from '@nestjs/typeorm';
import { DomainEvent } from './event.entity';
import { Global, Module } from '@nestjs/common';
import { EventsRepository } from './events.repository';
import { EventsService } from './events.service';

@Global()
@Module({
  imports: [TypeOrmModule.forFeature([DomainEvent])],
  providers: [EventsRepository, EventsService],
  exports: [EventsService],
})
export class EventsModule {}
