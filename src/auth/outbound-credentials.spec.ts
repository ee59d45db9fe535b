import type { Request } from 'express';
import type { KeyContext, Principal } from '../access/principal';
import { outboundCredentialHeaders } from './outbound-credentials';

function requestWith(
  hideCredentials: boolean | undefined,
  presented: Partial<Pick<Request, 'headers' | 'query' | 'url'>> = {},
  presentedVia: KeyContext['presentedVia'] = 'x-api-key',
): Request {
  const request = { headers: {}, query: {}, url: '/v1/tasks', ...presented } as Request;
  if (hideCredentials !== undefined) {
    request.principal = {
      kind: 'api_key',
      key: { hideCredentials, presentedVia } as KeyContext,
    } as Principal;
  }
  return request;
}

describe('outboundCredentialHeaders', () => {
  it('forwards the key when hide_credentials is false, read from where the caller put it', () => {
    expect(outboundCredentialHeaders(requestWith(false, { headers: { 'x-api-key': ' sk_value ' } }))).toEqual(
      {
        'X-API-Key': 'sk_value',
      },
    );
    expect(
      outboundCredentialHeaders(
        requestWith(false, { headers: { authorization: 'Bearer sk_value' } }, 'bearer'),
      ),
    ).toEqual({ 'X-API-Key': 'sk_value' });
    expect(
      outboundCredentialHeaders(
        requestWith(false, { url: '/v1/tasks?api_key=sk_value', query: { api_key: 'sk_value' } }, 'query'),
      ),
    ).toEqual({
      'X-API-Key': 'sk_value',
    });
  });

  it('forwards nothing when hide_credentials is true', () => {
    expect(outboundCredentialHeaders(requestWith(true, { headers: { 'x-api-key': 'sk_value' } }))).toEqual(
      {},
    );
  });

  it('forwards nothing for an access token caller', () => {
    expect(
      outboundCredentialHeaders(requestWith(undefined, { headers: { authorization: 'Bearer eyJ' } })),
    ).toEqual({});
  });

  it('forwards nothing when the key is not where the principal says it came from', () => {
    expect(outboundCredentialHeaders(requestWith(false, { headers: {} }, 'bearer'))).toEqual({});
  });
});
