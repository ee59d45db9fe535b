import { render } from 'preact';
import { App } from './app';
// Imported, not inlined: Vite emits it as a .css file, which the Content-Security-Policy (style-src 'self') allows.
import './styles.css';

const root = document.getElementById('app');
if (root) render(<App />, root);
