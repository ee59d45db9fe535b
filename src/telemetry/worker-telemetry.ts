// The worker's first import (worker.ts): telemetry starts before anything requires http, pg or ioredis.
import { startTelemetry } from './telemetry';

startTelemetry('gatehouse-worker');
