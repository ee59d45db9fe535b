import { useId, useState } from 'preact/hooks';

/**
 * How to call the API with a key just created, beside its value: a curl command and the TypeScript
 * client (clients/typescript, published as @gatehouse/client), both with this server's address and the
 * real value, so the first call can be pasted as it is. Like the value itself, the snippets live only in
 * the owning component's state and are gone once the view is left.
 */

/** The API's base URL as the browser reached it: the dashboard is served by the API, on its origin. */
export const apiBaseUrl = (): string => window.location.origin;

export function curlSnippet(baseUrl: string, key: string): string {
  return `curl ${baseUrl}/v1/agents \\\n  -H "Authorization: Bearer ${key}"`;
}

export function typeScriptSnippet(baseUrl: string, key: string): string {
  return [
    "import { createGatehouseClient } from '@gatehouse/client';",
    '',
    `const gatehouse = createGatehouseClient('${baseUrl}', '${key}');`,
    "const { data, error } = await gatehouse.GET('/v1/agents');",
    'console.log(error ?? data);',
  ].join('\n');
}

/** `text` with each occurrence of `secret` in a span of its own (so a screenshot can mask just the key). */
function marked(text: string, secret: string) {
  return text.split(secret).flatMap((part, i) =>
    i === 0
      ? [part]
      : [
          <span key={i} class="snippet-secret">
            {secret}
          </span>,
          part,
        ],
  );
}

function Snippet({ title, text, secret }: { title: string; text: string; secret: string }) {
  const id = useId();
  const [status, setStatus] = useState('');
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(text);
      setStatus('Copied.');
    } catch {
      setStatus('The browser refused the clipboard: select the text and copy it.');
    }
  };
  return (
    <figure class="snippet" aria-labelledby={id}>
      <figcaption id={id}>{title}</figcaption>
      <pre class="output snippet-text">
        <code>{marked(text, secret)}</code>
      </pre>
      <div class="snippet-actions">
        <button type="button" class="secondary small" onClick={() => void copy()}>
          Copy {title}
        </button>
        <span role="status" class="hint">
          {status}
        </span>
      </div>
    </figure>
  );
}

export function UseThisKey({ value }: { value: string }) {
  const baseUrl = apiBaseUrl();
  const id = useId();
  return (
    <section class="use-this-key" aria-labelledby={id}>
      <h3 id={id}>Use this key</h3>
      <p class="hint">
        Any API request takes the key in <code>Authorization: Bearer</code> (or <code>X-API-Key</code>). For
        example, the agents it may run:
      </p>
      <Snippet title="curl" text={curlSnippet(baseUrl, value)} secret={value} />
      <Snippet title="TypeScript" text={typeScriptSnippet(baseUrl, value)} secret={value} />
    </section>
  );
}
