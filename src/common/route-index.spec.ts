import express, { type Express, type NextFunction, type Request, type Response } from 'express';
import request from 'supertest';
import { indexRoutes, routeLayers } from './route-index';

type IndexableRouter = Parameters<typeof indexRoutes>[0];

/**
 * The same application twice, one with its routes indexed: every request must get the same answer
 * from both. The routes mix what the index must respect: parameters, a parameter in the first
 * segments (never indexable), one-segment routes, a middleware between two runs of routes, overlap
 * resolved by order, `next()` from a route, an error from a route, and a final 404 handler.
 */
function buildApp(indexed: boolean): Express {
  const app = express();
  const answer = (name: string) => (req: Request, res: Response) =>
    res.json({ name, params: req.params, route: req.route?.path });
  app.get('/docs', answer('docs'));
  app.get('/docs/', answer('docs slash'));
  app.use('/static', (_req, res) => res.send('static'));
  app.get('/lone', answer('lone'));
  app.use('/more-static', (_req, res) => res.send('more static'));
  app.get('/v1/roles', answer('roles list'));
  app.post('/v1/roles', answer('roles create'));
  app.get('/v1/roles/builtin', answer('roles builtin'));
  app.get('/v1/roles/:name', answer('roles one'));
  app.get('/v1/auth/verify', answer('verify'));
  app.get('/v1/files/:id/content', answer('file content'));
  app.get('/v1/skip', (_req: Request, _res: Response, next: NextFunction) => next());
  app.get('/v1/skip', answer('skip second'));
  app.get('/v1/boom', () => {
    throw new Error('boom');
  });
  app.get('/:tenant/agents', answer('tenant agents'));
  app.get('/metrics', answer('metrics'));
  app.all('/v1/any/thing', answer('any'));
  app.use((_req, res) => res.status(404).json({ name: 'not found' }));
  app.use((error: Error, _req: Request, res: Response, _next: NextFunction) =>
    res.status(500).json({ error: error.message }),
  );
  if (indexed) indexRoutes((app as unknown as { router: IndexableRouter }).router);
  return app;
}

const CASES: Array<[string, string]> = [
  ['GET', '/docs'],
  ['GET', '/docs/'],
  ['GET', '/docs//'],
  ['GET', '/lone'],
  ['GET', '/more-static/x'],
  ['GET', '/static/file.js'],
  ['GET', '/v1/roles'],
  ['GET', '/v1/roles/'],
  ['POST', '/v1/roles'],
  ['DELETE', '/v1/roles'],
  ['GET', '/V1/ROLES/builtin'],
  ['GET', '/v1/roles/builtin'],
  ['GET', '/v1/roles/custom'],
  ['GET', '/v1/roles/custom/extra'],
  ['GET', '/v1/auth/verify'],
  ['GET', '/v1/auth/verify?api_key=x'],
  ['HEAD', '/v1/auth/verify'],
  ['GET', '/v1/auth/verify/'],
  ['GET', '/v1/auth'],
  ['GET', '/v1/%61uth/verify'],
  ['GET', '/v1//auth/verify'],
  ['GET', '/v1/files/fil_1/content'],
  ['GET', '/v1/skip'],
  ['GET', '/v1/boom'],
  ['GET', '/acme/agents'],
  ['GET', '/v1/agents'],
  ['GET', '/metrics'],
  ['GET', '/metrics/'],
  ['GET', '/metrics/extra'],
  ['PATCH', '/v1/any/thing'],
  ['OPTIONS', '/v1/roles'],
  ['OPTIONS', '/v1/any/thing'],
  ['OPTIONS', '/nowhere'],
  ['GET', '/'],
  ['GET', '/nowhere/at/all'],
];

describe('indexRoutes', () => {
  const plain = buildApp(false);
  const indexed = buildApp(true);

  it('replaces runs of several route layers with dispatch layers', () => {
    const router = (indexed as unknown as { router: IndexableRouter }).router;
    const plainRouter = (plain as unknown as { router: IndexableRouter }).router;
    // A lone route (between two middleware) is left as it is: there is nothing to skip.
    expect(router.stack.filter((layer) => layer.route).map((layer) => layer.route!.path)).toEqual(['/lone']);
    expect(router.stack.length).toBeLessThan(plainRouter.stack.length);
    // Every route is still listed, in order.
    expect(routeLayers(router).map((layer) => layer.route!.path)).toEqual(
      routeLayers(plainRouter).map((layer) => layer.route!.path),
    );
  });

  it.each(CASES)('%s %s answers as without the index', async (method, path) => {
    const call = (app: Express) =>
      (request(app) as unknown as Record<string, (path: string) => request.Test>)[method.toLowerCase()](path);
    const [expected, actual] = await Promise.all([call(plain), call(indexed)]);
    expect({ status: actual.status, body: actual.body, allow: actual.headers.allow }).toEqual({
      status: expected.status,
      body: expected.body,
      allow: expected.headers.allow,
    });
  });

  it('routes by literal prefix, whatever the case', async () => {
    const res = await request(indexed).get('/V1/Roles/custom');
    expect(res.body).toEqual({ name: 'roles one', params: { name: 'custom' }, route: '/v1/roles/:name' });
  });
});
