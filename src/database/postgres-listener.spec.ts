import { Client } from 'pg';
import { discardConnection } from './postgres-listener';

describe('discardConnection', () => {
  it('drops what the connection reports, yet survives the error a server shutting down still sends it', async () => {
    const client = new Client({ connectionString: 'postgresql://127.0.0.1:1/none' });
    const notified = jest.fn();
    client.on('notification', notified);
    await discardConnection(client);
    client.emit('notification', { channel: 'c', payload: 'late' });
    expect(notified).not.toHaveBeenCalled();
    // What pg does with a FATAL received while no query runs: without a listener this throws.
    expect(() =>
      client.emit('error', new Error('terminating connection due to administrator command')),
    ).not.toThrow();
  });
});
