import { z } from 'zod';

/** A time as every answer shows it (`Date#toISOString`). */
export const timestamp = z.iso.datetime().meta({ description: 'ISO 8601, UTC, with milliseconds', example: '2026-06-01T10:00:00.123Z' });
