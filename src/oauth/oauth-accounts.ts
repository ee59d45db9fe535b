import { Injectable } from '@nestjs/common';
import type { IncomingMessage } from 'node:http';
import type { User } from '../accounts/user.entity';
import { UsersService } from '../accounts/users.service';
import { BrowserSessions } from '../sessions/browser-sessions';

/** oidc-provider's account id: the user and their organization, so that the consent knows both. */
export const accountIdOf = (organizationId: string, userId: string): string => `${organizationId}.${userId}`;
export const parseAccountId = (accountId: string): { organizationId: string; userId: string } | undefined => {
  const dot = accountId.indexOf('.');
  return dot > 0 ? { organizationId: accountId.slice(0, dot), userId: accountId.slice(dot + 1) } : undefined;
};

/**
 * The users the authorization server acts for. Its sign-in is the dashboard's: the browser's dashboard
 * session (its cookie, also sent under /oauth) is who is signed in, for the authorization endpoint too.
 */
@Injectable()
export class OAuthAccounts {
  constructor(
    private readonly users: UsersService,
    private readonly browserSessions: BrowserSessions,
  ) {}

  /** The active user an account id names; undefined when gone or deactivated. */
  async activeUser(accountId: string): Promise<User | undefined> {
    const account = parseAccountId(accountId);
    const user = account ? await this.users.findMember(account.organizationId, account.userId) : null;
    return user?.active ? user : undefined;
  }

  /** The account signed in to the dashboard on the browser that sent `request`, if any. */
  async signedIn(request: Pick<IncomingMessage, 'headers'>): Promise<string | undefined> {
    const user = await this.browserSessions.userOf(request);
    return user ? accountIdOf(user.organizationId, user.id) : undefined;
  }
}
