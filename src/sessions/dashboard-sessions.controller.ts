import { Body, Controller, Delete, HttpCode, Post, Req, Res, UseGuards } from '@nestjs/common';
import {
  ApiCookieAuth,
  ApiHeader,
  ApiNoContentResponse,
  ApiOkResponse,
  ApiOperation,
  ApiTags,
} from '@nestjs/swagger';
import type { Request, Response } from 'express';
import { Public } from '../access/route-access.decorators';
import { originOf } from '../audit/request-origin.decorator';
import { TokenRequestDto } from '../auth/dto/auth.dto';
import { ApiProblems } from '../common/openapi';
import { ReturnsSecret } from '../common/returns-secret.decorator';
import { CSRF_HEADER, CsrfHeaderGuard, SameOriginGuard } from './csrf.guards';
import { DashboardSignIns } from './dashboard-sign-ins';
import { DashboardSessionResponse } from './dto/dashboard-session.dto';
import {
  clearSessionCookie,
  readSessionCookie,
  SESSION_COOKIE,
  SESSION_COOKIE_SCHEME,
  setSessionCookie,
} from './session-cookie';
import { REFRESH_REUSE_GRACE_MS, SessionRefreshes } from './session-refreshes';
import { SessionError } from './sessions.errors';

const SET_COOKIE = {
  'Set-Cookie': {
    description: `\`${SESSION_COOKIE}\`: the session's refresh token (HttpOnly; SameSite=Strict; Path=/v1/auth/session), and the same value for the OAuth authorization pages (HttpOnly; SameSite=Lax; Path=/oauth).`,
    schema: { type: 'string' },
  },
};
const CSRF_HEADER_PARAMETER = {
  name: CSRF_HEADER,
  required: true,
  description: 'Must be `1`: proves the request comes from a page of this origin (403 csrf_check_failed).',
  schema: { type: 'string', enum: ['1'] },
};

/**
 * The dashboard's sign-in. The page keeps its access token in memory only; the refresh token lives in
 * an httpOnly, SameSite=Strict cookie scoped to these routes, so no credential is ever readable by a
 * script and a reload costs one refresh. Everything else the dashboard does goes through the /v1 API
 * with `Authorization: Bearer`, like any client.
 */
@ApiTags('auth')
@Controller('v1/auth/session')
export class DashboardSessionsController {
  constructor(
    private readonly signIns: DashboardSignIns,
    private readonly refreshes: SessionRefreshes,
  ) {}

  @Post()
  @Public()
  @HttpCode(200)
  @ReturnsSecret()
  @UseGuards(SameOriginGuard)
  @ApiOperation({
    summary: 'Sign in to the dashboard: an access token, and the session cookie that renews it',
    description: `Sets the \`${SESSION_COOKIE}\` cookie (Max-Age: DASHBOARD_SESSION_HOURS).`,
  })
  @ApiOkResponse({ type: DashboardSessionResponse, headers: SET_COOKIE })
  @ApiProblems(400, 401, 403, 429)
  async signIn(
    @Body() dto: TokenRequestDto,
    @Req() request: Request,
    @Res({ passthrough: true }) response: Response,
  ): Promise<DashboardSessionResponse> {
    const started = await this.signIns.signIn(dto, originOf(request));
    setSessionCookie(request, response, started.cookie);
    return started.response;
  }

  @Post('refresh')
  @Public()
  @HttpCode(200)
  @ReturnsSecret()
  @UseGuards(CsrfHeaderGuard, SameOriginGuard)
  @ApiCookieAuth(SESSION_COOKIE_SCHEME)
  @ApiHeader(CSRF_HEADER_PARAMETER)
  @ApiOperation({
    summary: 'A fresh access token for the session of the cookie',
    description: `Rotates the cookie: each refresh sets a new value and retires the one sent. A retired value sent again within ${REFRESH_REUSE_GRACE_MS / 1000} seconds (two tabs refreshing at once) still answers a token, without a new cookie; later, it ends the whole session (refresh-token reuse: someone else holds a copy), and every access token of the session is refused (401 session_expired). Without a session cookie: 204, nobody is signed in on this browser. Refused (401, and the cookie cleared) when the session was signed out, idle longer than DASHBOARD_IDLE_MINUTES, past its absolute cap, or its user is deactivated.`,
  })
  @ApiOkResponse({ type: DashboardSessionResponse, headers: SET_COOKIE })
  @ApiNoContentResponse({ description: 'No session cookie: nobody is signed in on this browser.' })
  @ApiProblems(401, 403)
  async refresh(
    @Req() request: Request,
    @Res({ passthrough: true }) response: Response,
  ): Promise<DashboardSessionResponse | undefined> {
    const cookie = readSessionCookie(request);
    if (cookie === undefined) {
      // No cookie: nobody signed in on this browser, which is the page's normal start, not an error
      // (a 401 here would be logged as one by every browser on every signed-out visit).
      response.status(204);
      return undefined;
    }
    try {
      const refreshed = await this.refreshes.refresh(cookie);
      if (refreshed.cookie) setSessionCookie(request, response, refreshed.cookie);
      return refreshed.response;
    } catch (error) {
      // A session that cannot be refreshed never will be: the browser may forget the cookie.
      if (error instanceof SessionError) clearSessionCookie(request, response);
      throw error;
    }
  }

  @Delete()
  @Public()
  @HttpCode(204)
  @UseGuards(CsrfHeaderGuard, SameOriginGuard)
  @ApiCookieAuth(SESSION_COOKIE_SCHEME)
  @ApiHeader(CSRF_HEADER_PARAMETER)
  @ApiOperation({
    summary: "Sign out: revoke the cookie's session and clear the cookie",
    description: "The session's access tokens are refused from the next request on (401 session_expired).",
  })
  @ApiNoContentResponse({ description: 'Signed out (also when there was no session).', headers: SET_COOKIE })
  @ApiProblems(403)
  async signOut(@Req() request: Request, @Res({ passthrough: true }) response: Response): Promise<void> {
    await this.signIns.signOut(readSessionCookie(request), originOf(request));
    clearSessionCookie(request, response);
  }
}
