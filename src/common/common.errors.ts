import { defineDomainErrors, ErrorKind } from './domain-error';

/** Codes of the request pipeline itself: body parsing, validation, pagination, routing. */
export enum CommonErrorCode {
  ValidationFailed = 'validation_failed',
  MalformedJson = 'malformed_json',
  JsonTooDeep = 'json_too_deep',
  JsonTooLarge = 'json_too_large',
  InvalidUnicode = 'invalid_unicode',
  ReservedKey = 'reserved_key',
  PayloadTooLarge = 'payload_too_large',
  UnsupportedEncoding = 'unsupported_encoding',
  UnsupportedCharset = 'unsupported_charset',
  RequestAborted = 'request_aborted',
  BadRequest = 'bad_request',
  InvalidCursor = 'invalid_cursor',
  NotFound = 'not_found',
}

export class CommonError extends defineDomainErrors('common', {
  [CommonErrorCode.ValidationFailed]: ErrorKind.InvalidInput,
  [CommonErrorCode.MalformedJson]: ErrorKind.InvalidInput,
  [CommonErrorCode.JsonTooDeep]: ErrorKind.InvalidInput,
  [CommonErrorCode.JsonTooLarge]: ErrorKind.TooLarge,
  [CommonErrorCode.InvalidUnicode]: ErrorKind.InvalidInput,
  [CommonErrorCode.ReservedKey]: ErrorKind.InvalidInput,
  [CommonErrorCode.PayloadTooLarge]: ErrorKind.TooLarge,
  [CommonErrorCode.UnsupportedEncoding]: ErrorKind.UnsupportedMediaType,
  [CommonErrorCode.UnsupportedCharset]: ErrorKind.UnsupportedMediaType,
  [CommonErrorCode.RequestAborted]: ErrorKind.InvalidInput,
  [CommonErrorCode.BadRequest]: ErrorKind.InvalidInput,
  [CommonErrorCode.InvalidCursor]: ErrorKind.InvalidInput,
  [CommonErrorCode.NotFound]: ErrorKind.NotFound,
}) {}
