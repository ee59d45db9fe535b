/**
 * The signed-in user, for every page: controls the user's permissions do not allow are not offered (the
 * API refuses them anyway), and a page without its read permission says so instead of failing.
 */
import { createContext } from 'preact';
import { useContext } from 'preact/hooks';
import type { SessionUser } from './api/session';

export const UserContext = createContext<SessionUser | null>(null);

export function useUser(): SessionUser {
  const user = useContext(UserContext);
  if (!user) throw new Error('useUser outside a signed-in session');
  return user;
}

/** `can('api_keys:create')`: whether the signed-in user holds that permission. */
export function useCan(): (permission: string) => boolean {
  const user = useUser();
  // The generated type lists every permission; the pages name them as plain strings.
  const held: readonly string[] = user.permissions;
  return (permission) => held.includes(permission);
}
