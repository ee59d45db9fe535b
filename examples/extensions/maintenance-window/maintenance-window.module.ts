import { Module } from '@nestjs/common';
import { MaintenanceWindowPolicy } from './maintenance-window.policy';

/**
 * The policy. Providing it is all that is needed: the key check finds every `@AccessPolicy` provider
 * of the app, whatever module provides it. Its schedule is the extension's configuration
 * (maintenance-window.config.ts), which the app provides to every module.
 */
@Module({ providers: [MaintenanceWindowPolicy] })
export class MaintenanceWindowModule {}
