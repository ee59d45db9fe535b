import { useCan } from '../permissions';

interface CreateProps {
  /** The permission creating needs; without it the button is not offered at all. */
  permission: string;
  label: string;
  onClick: () => void;
}

/** A list page's create button, set apart at the toolbar's end. */
export function CreateButton({ permission, label, onClick }: CreateProps) {
  const can = useCan();
  if (!can(permission)) return null;
  return (
    <button type="button" class="toolbar-action" onClick={onClick}>
      {label}
    </button>
  );
}

/** The toolbar of a page whose only control is its create button: none at all, rather than an empty bar. */
export function CreateToolbar(props: CreateProps) {
  const can = useCan();
  if (!can(props.permission)) return null;
  return (
    <div class="toolbar">
      <CreateButton {...props} />
    </div>
  );
}
