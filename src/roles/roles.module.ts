import { Module } from '@nestjs/common';
import { RolesGuard } from './roles.guard';
import { RolesService } from './roles.service';

@Module({
  providers: [RolesService, RolesGuard],
  exports: [RolesService, RolesGuard],
})
export class RolesModule {}
