import { useEffect, useId, useLayoutEffect, useRef, useState } from 'preact/hooks';

export interface MenuItem {
  label: string;
  onSelect: () => void;
  danger?: boolean;
}

/**
 * A menu button (WAI-ARIA menu button pattern): `Actions`, with aria-haspopup and aria-expanded, opens a
 * role=menu list of role=menuitem buttons. Arrow keys, Home and End move between items, Escape closes it
 * and returns focus to the button, Tab or a click elsewhere closes it. The list is fixed to the window
 * beside its button, so a scrolling table around it neither clips it nor grows. `describedBy` names what
 * the menu acts on (a row's key), read out after the button's name.
 */
export function ActionsMenu({
  items,
  describedBy,
  label = 'Actions',
}: {
  items: MenuItem[];
  describedBy?: string;
  label?: string;
}) {
  const [open, setOpen] = useState(false);
  const button = useRef<HTMLButtonElement>(null);
  const menu = useRef<HTMLUListElement>(null);
  const menuId = useId();

  const close = (returnFocus: boolean) => {
    setOpen(false);
    if (returnFocus) button.current?.focus();
  };

  const itemButtons = () =>
    Array.from(menu.current?.querySelectorAll<HTMLButtonElement>('[role="menuitem"]') ?? []);

  // Placed before paint: under the button, its right edge at the button's, kept inside the window.
  useLayoutEffect(() => {
    if (!open || !button.current || !menu.current) return;
    const anchor = button.current.getBoundingClientRect();
    const list = menu.current;
    const width = list.offsetWidth;
    const height = list.offsetHeight;
    const left = Math.max(8, Math.min(anchor.right - width, window.innerWidth - width - 8));
    const below = anchor.bottom + 4;
    const top = below + height > window.innerHeight - 8 ? Math.max(8, anchor.top - height - 4) : below;
    // CSSOM properties, which the Content-Security-Policy allows (it refuses style attributes).
    list.style.left = `${left}px`;
    list.style.top = `${top}px`;
    itemButtons()[0]?.focus();
  }, [open]);

  useEffect(() => {
    if (!open) return;
    const outside = (event: Event) => {
      const target = event.target as Node;
      if (!menu.current?.contains(target) && !button.current?.contains(target)) close(false);
    };
    // A fixed menu would drift away from its button on scroll or resize: close it instead.
    const moved = (event: Event) => {
      if (!menu.current?.contains(event.target as Node)) close(false);
    };
    document.addEventListener('pointerdown', outside, true);
    window.addEventListener('scroll', moved, true);
    window.addEventListener('resize', moved);
    return () => {
      document.removeEventListener('pointerdown', outside, true);
      window.removeEventListener('scroll', moved, true);
      window.removeEventListener('resize', moved);
    };
  }, [open]);

  const onMenuKey = (event: KeyboardEvent) => {
    const buttons = itemButtons();
    const index = buttons.indexOf(document.activeElement as HTMLButtonElement);
    const move = (to: number) => {
      event.preventDefault();
      buttons[(to + buttons.length) % buttons.length]?.focus();
    };
    if (event.key === 'ArrowDown') move(index + 1);
    else if (event.key === 'ArrowUp') move(index - 1);
    else if (event.key === 'Home') move(0);
    else if (event.key === 'End') move(buttons.length - 1);
    else if (event.key === 'Escape') {
      event.preventDefault();
      // Inside a dialog, Escape closes only the menu.
      event.stopPropagation();
      close(true);
    } else if (event.key === 'Tab') close(false);
  };

  const onButtonKey = (event: KeyboardEvent) => {
    if (event.key === 'ArrowDown' || event.key === 'ArrowUp') {
      event.preventDefault();
      setOpen(true);
    }
  };

  if (!items.length) return null;
  return (
    <div class="actions-menu">
      <button
        ref={button}
        type="button"
        class="secondary small"
        aria-haspopup="menu"
        aria-expanded={open}
        aria-controls={open ? menuId : undefined}
        aria-describedby={describedBy}
        onClick={() => (open ? close(false) : setOpen(true))}
        onKeyDown={onButtonKey}
      >
        {label}
      </button>
      {open && (
        <ul ref={menu} id={menuId} role="menu" class="menu" aria-label={label} onKeyDown={onMenuKey}>
          {items.map((item) => (
            <li key={item.label} role="none">
              <button
                type="button"
                role="menuitem"
                tabIndex={-1}
                class={item.danger ? 'menu-item danger-text' : 'menu-item'}
                onClick={() => {
                  // Focus back on the button first, so a dialog the item opens returns focus there.
                  close(true);
                  item.onSelect();
                }}
              >
                {item.label}
              </button>
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}
