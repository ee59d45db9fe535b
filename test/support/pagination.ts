/**
 * Lists are newest first by `created_at`, stored at millisecond precision (ties broken by the random
 * id): a pause between two creations keeps the order a test expects unambiguous.
 */
export const nextMillisecond = (): Promise<void> => new Promise((resolve) => setTimeout(resolve, 3));
