import type { ComponentChildren } from 'preact';
import { When } from './Page';

/** One term and its value in a `<dl class="facts">` of a detail page. */
export function Fact({ term, children }: { term: string; children: ComponentChildren }) {
  return (
    <>
      <dt>{term}</dt>
      <dd>{children}</dd>
    </>
  );
}

/** A fact that is a moment; `fallback` says what its absence means ("Never", "Not yet"). */
export function TimeFact({
  term,
  at,
  fallback,
}: {
  term: string;
  at: string | null | undefined;
  fallback?: string;
}) {
  return (
    <Fact term={term}>
      <When at={at} fallback={fallback} />
    </Fact>
  );
}

/** A detail page's section of facts: its heading, then the facts as one description list. */
export function DetailList({
  headingId,
  heading,
  children,
}: {
  headingId: string;
  heading: string;
  children: ComponentChildren;
}) {
  return (
    <section aria-labelledby={headingId}>
      <h2 id={headingId}>{heading}</h2>
      <dl class="facts">{children}</dl>
    </section>
  );
}
