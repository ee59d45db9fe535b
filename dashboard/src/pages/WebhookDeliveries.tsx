import { api, call, type Schemas } from '../api/client';
import { useAction, useLoad, usePaged } from '../api/hooks';
import { Page, ProblemNote, When } from '../components/Page';
import { Table } from '../components/Table';
import { useCan } from '../permissions';
import { Link } from '../router';

type Delivery = Schemas['DeliveryResponse'];

/** Failed for good, or failing and waiting for its next backoff attempt: Retry sends it now. */
const retryable = (delivery: Delivery) =>
  delivery.status === 'failed' || (delivery.status === 'pending' && delivery.attempts > 0);

export function WebhookDeliveries({ id }: { id: string }) {
  const can = useCan();
  const hook = useLoad(() => call(api.GET('/v1/webhooks/{id}', { params: { path: { id } } })), [id]);
  const deliveries = usePaged(
    (cursor) =>
      call(api.GET('/v1/webhooks/{id}/deliveries', { params: { path: { id }, query: { cursor } } })),
    [id],
  );
  const ping = useAction();

  const sendTest = () =>
    ping.run(async () => {
      await call(api.POST('/v1/webhooks/{id}/test', { params: { path: { id } } }));
      deliveries.reload();
    });

  return (
    <Page title="Webhook deliveries">
      <p>
        <Link href="/webhooks">← Back to the endpoints</Link>
      </p>
      <ProblemNote problem={hook.problem} />
      {hook.data && (
        <p class="lead">
          Deliveries to <code class="break">{hook.data.url}</code>, newest first. Failed deliveries are
          retried with backoff; Retry sends one again now.
        </p>
      )}
      <div class="toolbar">
        <button type="button" class="secondary" onClick={deliveries.reload} disabled={deliveries.loading}>
          Refresh
        </button>
        {can('webhooks:update') && (
          <button type="button" class="secondary" disabled={ping.busy} onClick={() => void sendTest()}>
            Send test event
          </button>
        )}
      </div>
      <ProblemNote problem={ping.problem} />
      <Table
        caption="Deliveries"
        rows={deliveries.items}
        rowKey={(delivery) => delivery.id}
        paged={deliveries}
        empty="No deliveries yet."
        columns={[
          { header: 'Event', rowHeader: true, cell: (delivery) => <code>{delivery.event_type}</code> },
          {
            header: 'Status',
            cell: (delivery) => <span class={`badge ${delivery.status}`}>{delivery.status}</span>,
          },
          { header: 'Attempts', fold: true, cell: (delivery) => delivery.attempts },
          { header: 'Response', fold: true, cell: (delivery) => delivery.response_status ?? '—' },
          { header: 'Last error', fold: true, cell: (delivery) => delivery.last_error ?? '—' },
          { header: 'Next attempt', fold: true, cell: (delivery) => <When at={delivery.next_attempt_at} /> },
          { header: 'Created', fold: true, cell: (delivery) => <When at={delivery.created_at} /> },
          {
            header: 'Actions',
            cell: (delivery) =>
              retryable(delivery) && can('webhooks:update') ? (
                <Retry webhookId={id} delivery={delivery} onRetried={deliveries.reload} />
              ) : null,
          },
        ]}
      />
    </Page>
  );
}

function Retry({
  webhookId,
  delivery,
  onRetried,
}: {
  webhookId: string;
  delivery: Delivery;
  onRetried: () => void;
}) {
  const action = useAction();
  const retry = () =>
    action.run(async () => {
      await call(
        api.POST('/v1/webhooks/{id}/deliveries/{deliveryId}/retry', {
          params: { path: { id: webhookId, deliveryId: delivery.id } },
        }),
      );
      onRetried();
    });
  return (
    <>
      <button type="button" class="secondary" disabled={action.busy} onClick={() => void retry()}>
        Retry
      </button>
      <ProblemNote problem={action.problem} />
    </>
  );
}
