import type { IncomingMessage } from 'node:http';
import type { KeyContext, Principal } from '../access/principal';
import { outboundCredentialHeaders, rememberPresentedKey } from './outbound-credentials';

function requestWith(hideCredentials: boolean | undefined, presented?: string): IncomingMessage {
  const request = {} as IncomingMessage;
  if (hideCredentials !== undefined) {
    request.principal = { kind: 'api_key', key: { hideCredentials } as KeyContext } as Principal;
  }
  if (presented) rememberPresentedKey(request, presented);
  return request;
}

describe('outboundCredentialHeaders', () => {
  it('forwards the key when hide_credentials is false', () => {
    expect(outboundCredentialHeaders(requestWith(false, 'sk_value'))).toEqual({ 'X-API-Key': 'sk_value' });
  });

  it('forwards nothing when hide_credentials is true', () => {
    expect(outboundCredentialHeaders(requestWith(true, 'sk_value'))).toEqual({});
  });

  it('forwards nothing for an access token caller', () => {
    expect(outboundCredentialHeaders(requestWith(undefined))).toEqual({});
  });

  it('keeps the value out of serialisation', () => {
    const request = requestWith(false, 'sk_value');
    expect(JSON.stringify(request)).not.toContain('sk_value');
    expect(Object.keys(request)).not.toContain('sk_value');
  });
});
