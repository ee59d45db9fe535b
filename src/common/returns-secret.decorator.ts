import { Header } from '@nestjs/common';

/**
 * A route whose answer carries a secret (an access token, a key value, a webhook signing secret):
 * `Cache-Control: no-store`, so no browser, proxy or CDN keeps a copy of it (RFC 9111, 5.2.2.5).
 */
export const ReturnsSecret = (): MethodDecorator => Header('Cache-Control', 'no-store');
