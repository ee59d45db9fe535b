import type { NextFunction, Request, Response } from 'express';
import { sep } from 'node:path';

/**
 * The dashboard's own files only, no inline script or style, nothing from elsewhere, never framed:
 * an injected `<script>` does not run, and the page can talk to no server but this one.
 */
export const DASHBOARD_CONTENT_SECURITY_POLICY = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "font-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "frame-ancestors 'none'",
  "form-action 'self'",
].join('; ');

/**
 * Headers of every answer under /dashboard, the 404s included. Everything is `no-store` unless it is a
 * hashed asset (see cacheHashedAssets), index.html above all: a deploy must reach the next page load,
 * never an index.html that names assets which no longer exist.
 */
export function dashboardHeaders(_request: Request, response: Response, next: NextFunction): void {
  response.setHeader('Content-Security-Policy', DASHBOARD_CONTENT_SECURITY_POLICY);
  response.setHeader('X-Content-Type-Options', 'nosniff');
  response.setHeader('Referrer-Policy', 'no-referrer');
  response.setHeader('Cache-Control', 'no-store');
  next();
}

/**
 * The static server's hook, called with the file it is about to send: Vite names the files under
 * assets/ after their content, so a changed file is a new URL and these may be kept for good. Decided
 * by the file actually sent, not by the URL.
 */
export function cacheHashedAssets(assetsDirectory: string): (response: Response, file: string) => void {
  const prefix = assetsDirectory + sep;
  return (response, file) => {
    if (file.startsWith(prefix)) response.setHeader('Cache-Control', 'public, max-age=31536000, immutable');
  };
}
