/** The server-rendered pages of the authorization endpoint: sign-in, consent and errors. */

export const escapeHtml = (value: string): string =>
  value.replace(
    /[&<>"']/g,
    (character) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[character]!,
  );

function page(title: string, body: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>${escapeHtml(title)} · Gatehouse</title>
<style>
body{font-family:system-ui,sans-serif;max-width:28rem;margin:3rem auto;padding:0 1rem;color:#1f2328}
h1{font-size:1.4rem}label{display:block;margin:.8rem 0 .2rem}input{width:100%;padding:.4rem;box-sizing:border-box}
button{margin:1rem .5rem 0 0;padding:.5rem 1.2rem}ul{padding-left:1.2rem}.denied{color:#8a8a8a;text-decoration:line-through}
.error{color:#b42318}code{font-size:.95em}
</style>
</head>
<body>
${body}
</body>
</html>`;
}

export function signInPage(input: {
  action: string;
  csrf: string;
  clientName: string;
  error?: string;
}): string {
  return page(
    'Sign in',
    `<h1>Sign in to Gatehouse</h1>
<p><strong>${escapeHtml(input.clientName)}</strong> asks to access Gatehouse on your behalf. Sign in with your dashboard account to continue.</p>
${input.error ? `<p class="error" role="alert">${escapeHtml(input.error)}</p>` : ''}
<form method="post" action="${escapeHtml(input.action)}">
<input type="hidden" name="csrf" value="${escapeHtml(input.csrf)}">
<label for="email">Email</label><input id="email" name="email" type="email" autocomplete="username" required>
<label for="password">Password</label><input id="password" name="password" type="password" autocomplete="current-password" required>
<button type="submit">Sign in</button>
</form>`,
  );
}

export interface ConsentView {
  action: string;
  csrf: string;
  clientName: string;
  clientId: string;
  redirectHost: string;
  organizationName: string;
  userEmail: string;
  resource: string;
  granted: string[];
  notHeld: string[];
}

export function consentPage(view: ConsentView): string {
  const items = [
    ...view.granted.map((permission) => `<li><code>${escapeHtml(permission)}</code></li>`),
    ...view.notHeld.map(
      (permission) =>
        `<li class="denied"><code>${escapeHtml(permission)}</code> — not granted: you do not hold this permission</li>`,
    ),
  ].join('\n');
  return page(
    'Authorize',
    `<h1>Authorize ${escapeHtml(view.clientName)}</h1>
<p><strong>${escapeHtml(view.clientName)}</strong> (redirecting to <strong>${escapeHtml(view.redirectHost)}</strong>) asks to act as <strong>${escapeHtml(view.userEmail)}</strong> in the organization <strong>${escapeHtml(view.organizationName)}</strong>, at <code>${escapeHtml(view.resource)}</code>, with these permissions:</p>
<ul>
${items || '<li>no permission</li>'}
</ul>
<form method="post" action="${escapeHtml(view.action)}">
<input type="hidden" name="csrf" value="${escapeHtml(view.csrf)}">
<button type="submit" name="decision" value="allow">Allow</button>
<button type="submit" name="decision" value="deny">Deny</button>
</form>`,
  );
}

export function errorPage(title: string, message: string): string {
  return page(title, `<h1>${escapeHtml(title)}</h1><p class="error">${escapeHtml(message)}</p>`);
}
