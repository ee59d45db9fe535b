// The API's first import (main.ts): telemetry starts before anything requires http, pg or ioredis.
import { startTelemetry } from './telemetry';

startTelemetry('gatehouse-api');
