/** A compiled `allowed_referrers` entry: an exact URL, or a prefix when the pattern ends in `/*`. */
interface ReferrerRule {
  exact?: string;
  prefix?: string;
}

function normalize(url: string): string | undefined {
  try {
    const parsed = new URL(url);
    if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') return undefined;
    parsed.hash = '';
    return parsed.href;
  } catch {
    return undefined;
  }
}

export function compileReferrerRules(patterns: readonly string[]): ReferrerRule[] {
  return patterns.flatMap((pattern): ReferrerRule[] => {
    if (pattern.endsWith('/*')) {
      const prefix = normalize(pattern.slice(0, -1));
      return prefix ? [{ prefix }] : [];
    }
    const exact = normalize(pattern);
    return exact ? [{ exact }] : [];
  });
}

/**
 * Compares normalized URLs: `https://app.example.com/*` allows `https://app.example.com/x` and the
 * bare origin `https://app.example.com`, never `https://app.example.com.evil.net/`, because the
 * prefix keeps the slash that ends the host.
 */
export function referrerAllowed(rules: readonly ReferrerRule[], referrer: string | undefined): boolean {
  if (!referrer) return false;
  const url = normalize(referrer);
  if (!url) return false;
  return rules.some((rule) => (rule.exact ? url === rule.exact : url.startsWith(rule.prefix!)));
}
