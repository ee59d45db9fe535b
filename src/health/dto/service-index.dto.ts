/** `GET /`: paths relative to the server's address. */
export class ServiceIndex {
  /** Always `Gatehouse`. */
  name: string;
  /** The server's version (package.json; CHANGELOG.md says what each changed). */
  version: string;
  /** The REST API's prefix. */
  api: string;
  /** The operators' dashboard. */
  dashboard: string;
  /** The OpenAPI 3 document of the API. */
  openapi: string;
  /** Readiness: 200 when the database (and Redis, when set) answer. */
  health: string;
}
