"""JavaScript run in the page: the init script and the UI-tree observer.

Everything the agent supplies reaches the page as *data* (CDP ``Input.insertText``, JSON
arguments); the sources below are navrl's own, and the app hooks spliced into them come
from trusted configuration (a suite file's author), never from the agent.
"""
from __future__ import annotations

# Runs before any page script in every document (``BrowserContext.add_init_script``).
# %(timer_ms)d: setTimeout delays up to this are waited for by settle(); %(long_press_ms)d:
# a touch held this long without moving is a long press (contextmenu, no click).
INIT_JS = r"""
(() => {
  if (window.__navrl) return;
  const st = window.setTimeout.bind(window), ct = window.clearTimeout.bind(window);
  const N = { mut: 0, ev: 0, timers: new Map(), inflight: 0, leaving: false,
              timerMs: %(timer_ms)d, longPressMs: %(long_press_ms)d, setTimeout: st };
  Object.defineProperty(window, '__navrl', { value: N, enumerable: false, configurable: false });

  // -- what is still going on: short timers, requests, an unloading document
  window.setTimeout = function (fn, ms, ...args) {
    const d = Number(ms) || 0;
    if (typeof fn !== 'function' || d > N.timerMs) return st(fn, ms, ...args);
    const id = st(function () { N.timers.delete(id); return fn.apply(this, args); }, ms);
    N.timers.set(id, performance.now() + d);
    return id;
  };
  window.clearTimeout = function (id) { N.timers.delete(id); return ct(id); };
  if (window.fetch) {
    const f = window.fetch;
    window.fetch = function (...a) {
      N.inflight++;
      let p;
      try { p = f.apply(this, a); } catch (e) { N.inflight--; throw e; }
      return p.finally(() => { N.inflight--; });
    };
  }
  if (window.XMLHttpRequest) {
    const send = XMLHttpRequest.prototype.send;
    XMLHttpRequest.prototype.send = function (...a) {
      N.inflight++;
      this.addEventListener('loadend', () => { N.inflight--; }, { once: true });
      try { return send.apply(this, a); } catch (e) { N.inflight--; throw e; }
    };
  }
  addEventListener('beforeunload', () => { N.leaving = true; }, true);
  addEventListener('pagehide', () => { N.leaving = true; }, true);
  N.busy = () => {
    const now = performance.now();
    for (const [id, due] of N.timers) if (due < now - 2000) N.timers.delete(id);
    return N.leaving || N.inflight > 0 || N.timers.size > 0;
  };
  const frame = () => new Promise((r) => { let done = false; requestAnimationFrame(() => { done = true; r(); });
                                           st(() => { if (!done) r(); }, 100); });
  // scrolling runs on the compositor and reaches the page later: after a swipe, wait for its
  // scrollend (or for nothing having moved for 150 ms)
  N.scrollStill = async (maxMs) => {
    const t0 = performance.now();
    while (performance.now() - t0 < maxMs) {
      await frame();
      if (N.lastScrollEnd > N.touchT && N.lastScrollEnd >= N.lastScroll) return;
      if (performance.now() - Math.max(N.lastScroll, N.touchEndT) > 150) return;
    }
  };
  // animations under way: jQuery's (its timer list) and the page's finite CSS / Web Animations
  // (an endless spinner is not waited for); settle waits for them up to a second
  N.animating = () => {
    const jq = window.jQuery;
    if (jq && jq.timers && jq.timers.length > 0) return true;
    if (!document.getAnimations) return false;
    for (const a of document.getAnimations()) {
      if (a.playState !== 'running' || !a.effect) continue;
      const end = a.effect.getComputedTiming().endTime;
      if (Number.isFinite(end)) return true;
    }
    return false;
  };
  // An animation's end is seen before its finish event runs (Chrome dispatches it at the next
  // rendering update), so after one was under way settle waits two frames more, for the page's
  // reaction to the end (an onfinish handler) to be in the tree it reads.
  N.settle = (maxMs, scrolled) => new Promise((resolve) => {
    const t0 = performance.now(), animMs = Math.min(maxMs, 1000);
    let ran = false;
    const tick = () => {
      const dt = performance.now() - t0, moving = dt < animMs && N.animating();
      ran = ran || moving;
      if (dt >= maxMs || (!N.busy() && !moving && !ran)) resolve(N.leaving ? null : N.sig());
      else if (!N.busy() && !moving) { ran = false; frame().then(frame).then(tick); }
      else st(tick, 4);
    };
    if (scrolled) N.scrollStill(Math.min(maxMs, 1000)).then(tick); else tick();
  });

  // -- typing into a date / time field, which takes no inserted text: the typed date or time
  //    ("05/20/2010", "2010-05-20", "2:30 PM", "14:30") becomes its value, with the input and
  //    change events a person's typing fires; true where it did
  const pad = (n) => String(n).padStart(2, '0');
  const parseDate = (t) => {
    let m = /^(\d{1,2})\/(\d{1,2})\/(\d{4})$/.exec(t);
    if (m) return m[3] + '-' + pad(m[1]) + '-' + pad(m[2]);
    m = /^(\d{4})-(\d{1,2})-(\d{1,2})$/.exec(t);
    return m ? m[1] + '-' + pad(m[2]) + '-' + pad(m[3]) : null;
  };
  const parseTime = (t) => {
    const m = /^(\d{1,2}):(\d{2})(?::(\d{2}))?\s*([AaPp])\.?[Mm]?\.?$/.exec(t) || /^(\d{1,2}):(\d{2})(?::(\d{2}))?()$/.exec(t);
    if (!m) return null;
    let h = +m[1];
    if (m[4]) { if (h < 1 || h > 12) return null; h = (h %% 12) + (/[Pp]/.test(m[4]) ? 12 : 0); }
    if (h > 23 || +m[2] > 59) return null;
    return pad(h) + ':' + m[2] + (m[3] ? ':' + m[3] : '');
  };
  N.typeIntoDateTime = (text) => {
    let el = document.activeElement;
    while (el && el.shadowRoot && el.shadowRoot.activeElement) el = el.shadowRoot.activeElement;
    if (!el || el.tagName !== 'INPUT' || el.disabled || el.readOnly) return false;
    const ty = (el.type || '').toLowerCase(), t = String(text).trim();
    let v = null;
    if (ty === 'date') v = parseDate(t);
    else if (ty === 'time') v = parseTime(t);
    else if (ty === 'datetime-local') {
      const m = /^(\S+)[\sT,]+(.+)$/.exec(t);
      const d = m && parseDate(m[1]), h = m && parseTime(m[2].trim());
      v = d && h ? d + 'T' + h : null;
    } else return false;
    if (v === null) return true;                       // a date / time field, and text it cannot take
    el.value = v;
    if (el.value !== v) return true;
    el.dispatchEvent(new Event('input', { bubbles: true }));
    el.dispatchEvent(new Event('change', { bubbles: true }));
    return true;
  };

  // -- did an action change anything: DOM mutations, scrolling, input, focus, URL
  const count = () => { N.ev++; };
  N.sc = 0; N.lastScroll = 0; N.lastScrollEnd = 0; N.touchT = 0; N.touchEndT = 0;
  addEventListener('scroll', () => { N.ev++; N.sc++; N.lastScroll = performance.now(); }, true);
  addEventListener('scrollend', () => { N.lastScrollEnd = performance.now(); }, true);
  addEventListener('touchstart', () => { N.touchT = performance.now(); }, { capture: true, passive: true });
  addEventListener('touchend', () => { N.touchEndT = performance.now(); }, { capture: true, passive: true });
  for (const t of ['input', 'change', 'focusin', 'focusout', 'toggle']) addEventListener(t, count, true);
  const mo = new MutationObserver((rs) => { N.mut += rs.length; });
  mo.observe(document, { subtree: true, childList: true, attributes: true, characterData: true });
  N.sig = () => [N.mut, N.ev, location.href, Math.round(scrollX), Math.round(scrollY)].join('|');

  // -- long press as on a phone: held still for longPressMs -> contextmenu, and no click on release
  let press = null;
  addEventListener('touchstart', (e) => {
    if (e.touches.length !== 1) { press = null; return; }
    const t = e.touches[0];
    const p = press = { x: t.clientX, y: t.clientY, target: e.target, moved: false, fired: false };
    p.timer = st(() => {
      if (press !== p || p.moved) return;
      p.fired = true;
      p.target.dispatchEvent(new MouseEvent('contextmenu', { bubbles: true, cancelable: true, composed: true,
                                                            clientX: p.x, clientY: p.y, button: 2 }));
    }, N.longPressMs);
  }, { capture: true, passive: true });
  addEventListener('touchmove', (e) => {
    const t = e.touches[0];
    if (press && t && Math.hypot(t.clientX - press.x, t.clientY - press.y) > 10) press.moved = true;
  }, { capture: true, passive: true });
  addEventListener('touchend', (e) => {
    const p = press; press = null;
    if (!p) return;
    ct(p.timer);
    if (p.fired && e.cancelable) e.preventDefault();
  }, { capture: true, passive: false });
  addEventListener('touchcancel', () => { if (press) ct(press.timer); press = null; }, true);

  // -- <select> on a touch screen: an in-page picker (a phone's native picker), since
  //    Chromium's own popup is a separate window that neither screenshots nor taps reach
  const closePicker = () => { for (const o of document.querySelectorAll('[data-navrl-picker]')) o.remove(); };
  N.closePicker = closePicker;
  const openPicker = (sel) => {
    closePicker();
    const ov = document.createElement('div');
    ov.setAttribute('data-navrl-picker', '');
    ov.style.cssText = 'position:fixed;left:0;top:0;right:0;bottom:0;z-index:2147483647;background:rgba(0,0,0,.35);' +
      'display:flex;flex-direction:column;justify-content:flex-end;margin:0;padding:0';
    const panel = document.createElement('div');
    panel.setAttribute('role', 'listbox');
    panel.setAttribute('aria-label', (sel.labels && sel.labels.length ? sel.labels[0].textContent.replace(/\s+/g, ' ').trim().replace(/\s*:$/, '') : '') || sel.getAttribute('aria-label') || 'list');
    panel.style.cssText = 'background:#fff;max-height:75%%;overflow-y:auto;font:4.1vw system-ui,sans-serif;color:#000';
    Array.from(sel.options).forEach((opt, i) => {
      const row = document.createElement('div');
      row.setAttribute('role', 'option');
      row.setAttribute('aria-selected', String(i === sel.selectedIndex));
      if (opt.disabled) row.setAttribute('aria-disabled', 'true');
      row.textContent = opt.label || opt.textContent;
      row.style.cssText = 'padding:1.5vw 2.5vw;border-top:1px solid #ddd;cursor:pointer;white-space:nowrap;' +
        'overflow:hidden;text-overflow:ellipsis' + (i === sel.selectedIndex ? ';font-weight:bold' : '');
      row.addEventListener('click', (ev) => {
        ev.stopPropagation();
        if (opt.disabled) return;
        closePicker();
        if (sel.selectedIndex !== i) {
          sel.selectedIndex = i;
          sel.dispatchEvent(new Event('input', { bubbles: true }));
          sel.dispatchEvent(new Event('change', { bubbles: true }));
        }
      });
      panel.appendChild(row);
    });
    ov.appendChild(panel);
    ov.addEventListener('click', (ev) => { if (ev.target === ov) closePicker(); });
    (document.body || document.documentElement).appendChild(ov);
  };
  addEventListener('mousedown', (e) => {
    const caps = e.sourceCapabilities;
    if (!caps || !caps.firesTouchEvents) return;
    const s = e.target && e.target.closest ? e.target.closest('select') : null;
    if (!s || s.multiple || s.size > 1 || s.disabled) return;
    e.preventDefault();
    s.focus();
    openPicker(s);
  }, true);
})();
"""

# Called as (MOUSE_DRAG_JS)(el): the element at or above ``el`` that a mouse drag moves, or null:
# a jQuery UI draggable's handle, an item of a sortable list, a slider's or a resizable's handle,
# a d3 drag target (v3 keeps its listener as el["__onmousedown.drag"], v4+ in el.__on); not a
# control inside one (jQuery UI's default "cancel"). These
# listen to mouse events only: the device drags them with the mouse, and the tree says "drag".
MOUSE_DRAG_JS = r"""
(el) => {
  const SEL = '.ui-draggable-handle, .ui-sortable > *, .ui-slider-handle, .ui-resizable-handle';
  // jQuery UI's default "cancel" (and the dialog's close button): a press there starts no drag
  const CANCEL = 'input, textarea, button, select, option, .ui-dialog-titlebar-close';
  for (let e = el; e && e.nodeType === 1; e = e.parentElement) {
    if (e.matches(CANCEL)) return null;
    if (e.matches(SEL) && !e.closest('.ui-draggable-disabled, .ui-sortable-disabled, .ui-slider-disabled, .ui-resizable-disabled'))
      return e;
    if (e['__onmousedown.drag'] || (Array.isArray(e.__on) && e.__on.some((o) => o.type === 'mousedown' && o.name === 'drag')))
      return e;
  }
  return null;
}
"""

# Called as (MOUSE_DRAG_AT_JS)(x, y): whether the element under CSS point (x, y) takes a mouse drag.
MOUSE_DRAG_AT_JS = "((x, y) => { const el = document.elementFromPoint(x, y); return !!el && !!(" + MOUSE_DRAG_JS.strip() + ")(el); })"

# Called as (OBSERVE_JS)(args, stateFn): the UI tree in screenshot pixels, the page state
# (the app's own reward / success check) and the change signature.
OBSERVE_JS = r"""
(args, stateFn) => {
  const S = args.scale, W = args.width, H = args.height, vw = innerWidth, vh = innerHeight;
  const LEAF = new Set(['button', 'link', 'checkbox', 'radio', 'switch', 'tab', 'menuitem', 'option', 'textfield',
                        'combobox', 'slider', 'image']);
  const ROLE_MAP = { textbox: 'textfield', searchbox: 'textfield', heading: 'header', img: 'image',
                     menuitemcheckbox: 'checkbox', menuitemradio: 'radio', spinbutton: 'textfield', listbox: null };
  const TEXT_INPUT = new Set(['', 'text', 'email', 'number', 'password', 'search', 'tel', 'url', 'date',
                              'datetime-local', 'month', 'time', 'week']);
  const norm = (s) => (s || '').replace(/\s+/g, ' ').trim();
  const cut = (s, n) => (s.length > n ? s.slice(0, n - 1) + '\u2026' : s);
  const deepActive = () => { let a = document.activeElement; while (a && a.shadowRoot && a.shadowRoot.activeElement) a = a.shadowRoot.activeElement; return a; };
  const active = deepActive();
  const styleCache = new Map();
  const cs = (el) => { let s = styleCache.get(el); if (!s) { s = getComputedStyle(el); styleCache.set(el, s); } return s; };
  const visible = (el) => {
    if (el.checkVisibility) return el.checkVisibility({ checkOpacity: true, checkVisibilityCSS: true,
                                                        opacityProperty: true, visibilityProperty: true });
    const s = cs(el); return s.display !== 'none' && s.visibility !== 'hidden' && s.opacity !== '0';
  };
  const roleOf = (el) => {
    const r = (el.getAttribute('role') || '').trim().split(/\s+/)[0].toLowerCase();
    if (r && r !== 'presentation' && r !== 'none' && r !== 'generic') return r in ROLE_MAP ? ROLE_MAP[r] : r;
    const t = el.tagName;
    if (t === 'A') return el.hasAttribute('href') ? 'link' : null;
    if (t === 'BUTTON' || t === 'SUMMARY') return 'button';
    if (t === 'INPUT') {
      // the browser's own reading of the type: an unknown one (MiniWoB's type="input") is 'text'
      const ty = (el.type || el.getAttribute('type') || '').toLowerCase();
      if (ty === 'hidden') return 'hidden';
      if (ty === 'checkbox') return 'checkbox';
      if (ty === 'radio') return 'radio';
      if (ty === 'range') return 'slider';
      if (ty === 'button' || ty === 'submit' || ty === 'reset' || ty === 'image') return 'button';
      if (TEXT_INPUT.has(ty)) return 'textfield';
      return 'button';
    }
    if (t === 'TEXTAREA') return 'textfield';
    if (t === 'SELECT') return 'combobox';
    if (t === 'IMG') return (el.getAttribute('alt') || el.getAttribute('title')) ? 'image' : null;
    if (/^H[1-6]$/.test(t)) return 'header';
    if (el.isContentEditable && (el.parentElement === null || !el.parentElement.isContentEditable)) return 'textfield';
    return null;
  };
  const handlers = (el) => {
    if (el.onclick || el.onmousedown || el.onmouseup || el.ontouchstart || el.ontouchend) return true;
    if (el.__onclick || el.__onmousedown || el.__onmouseup) return true;                    // d3 v3
    if (Array.isArray(el.__on) && el.__on.some((o) => /^(click|mouse(down|up)|touch(start|end))$/.test(o.type))) return true;  // d3 v4+
    const jq = window.jQuery;
    if (jq && jq._data) { const ev = jq._data(el, 'events'); if (ev && (ev.click || ev.mousedown || ev.mouseup || ev.touchstart)) return true; }
    return false;
  };
  const clickable = (el) => {
    if (handlers(el)) return true;
    if (el.hasAttribute('tabindex') && el.tabIndex >= 0) return true;
    if (cs(el).cursor === 'pointer') { const p = el.parentElement; return !p || cs(p).cursor !== 'pointer'; }
    return false;
  };
  const inertInline = (e) => {
    const d = cs(e).display;
    if (d === 'none') return true;
    if (e.tagName === 'BR') return true;
    if (d !== 'inline' && d !== 'contents') return false;
    const r = roleOf(e);
    if (r && r !== 'header') return false;
    if (clickable(e)) return false;
    for (let c = e.firstElementChild; c; c = c.nextElementSibling) if (!inertInline(c)) return false;
    return true;
  };
  const textBlock = (el) => {
    let text = false;
    for (const n of el.childNodes) {
      if (n.nodeType === 3) { if (/\S/.test(n.data)) text = true; }
      else if (n.nodeType === 1) { if (!inertInline(n)) return false; }
    }
    return text;
  };
  const textOf = (el) => norm(el.innerText !== undefined && el instanceof HTMLElement ? el.innerText : el.textContent);
  const usedLabels = new Set();
  const labelText = (lab, ctl) => {
    let s = '';
    for (const n of lab.childNodes) {
      if (n.nodeType === 3) s += ' ' + n.data;
      else if (n.nodeType === 1 && n !== ctl && !n.contains(ctl) && !['INPUT', 'SELECT', 'TEXTAREA', 'BUTTON'].includes(n.tagName)) s += ' ' + (n.innerText || n.textContent);
    }
    return norm(s).replace(/\s*:$/, '');
  };
  const CONTROL = 'input,select,textarea,button,meter,output,progress';
  const nameOf = (el, role) => {
    const lb = el.getAttribute('aria-labelledby');
    if (lb) {
      const s = norm(lb.split(/\s+/).map((id) => { const r = document.getElementById(id); return r ? r.textContent : ''; }).join(' '));
      if (s) return s;
    }
    const al = norm(el.getAttribute('aria-label'));
    if (al) return al;
    const isCtl = el.matches && el.matches('input,select,textarea');
    if (isCtl) {
      if (el.labels && el.labels.length) {
        const s = norm(Array.from(el.labels).map((l) => { usedLabels.add(l); return labelText(l, el); }).join(' '));
        if (s) return s;
      }
      const prev = el.previousElementSibling;
      if (prev && prev.tagName === 'LABEL' && !prev.htmlFor && !prev.querySelector(CONTROL)) {
        usedLabels.add(prev);
        const s = labelText(prev, el);
        if (s) return s;
      }
      const ty = (el.getAttribute('type') || '').toLowerCase();
      if (el.tagName === 'INPUT' && ['button', 'submit', 'reset'].includes(ty))
        return norm(el.value) || (ty === 'reset' ? 'Reset' : 'Submit');
      if (el.tagName === 'INPUT' && ty === 'image') return norm(el.alt || el.title) || 'Submit';
      const ph = norm(el.getAttribute('placeholder') || el.getAttribute('title'));
      if (ph) return ph;
      if (el.tagName === 'SELECT') return 'list';
      if (ty === 'password') return 'password field';
      if (ty === 'search') return 'search field';
      if (role === 'checkbox') return 'checkbox';
      if (role === 'radio') return 'radio button';
      if (role === 'slider') return 'slider';
      return 'text field';
    }
    if (el.tagName === 'IMG') return norm(el.alt || el.title);
    let s = textOf(el);
    if (!s) { const img = el.querySelector && el.querySelector('img[alt]'); if (img) s = norm(img.alt); }
    if (!s) s = norm(el.getAttribute('title'));
    if (!s && role === 'textfield') s = norm(el.getAttribute('placeholder')) || 'text field';
    return s;
  };
  // a date / time field's value as the field shows it (en-US: 05/20/2010, 02:30 PM)
  const shownDateTime = (el) => {
    const ty = (el.type || '').toLowerCase(), v = el.value;
    if (!v) return null;
    const d = (x) => { const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(x); return m ? m[2] + '/' + m[3] + '/' + m[1] : null; };
    const t = (x) => { const m = /^(\d{2}):(\d{2})(:\d{2})?/.exec(x); if (!m) return null; const h = +m[1];
                       return String(h % 12 || 12).padStart(2, '0') + ':' + m[2] + (m[3] || '') + (h < 12 ? ' AM' : ' PM'); };
    if (ty === 'date') return d(v);
    if (ty === 'time') return t(v);
    if (ty === 'datetime-local') { const [a, b] = v.split('T'); return d(a) && t(b || '') ? d(a) + ', ' + t(b) : null; }
    return null;
  };
  const valueOf = (el, role) => {
    if (role === 'checkbox' || role === 'radio' || role === 'switch') {
      const c = el.matches('input') ? el.checked : el.getAttribute('aria-checked') === 'true';
      return c ? 'on' : 'off';
    }
    if (role === 'textfield') {
      const v = el.matches('input,textarea') ? el.value : norm(el.textContent);
      const shown = el.matches('input') ? shownDateTime(el) : null;
      if (shown) return shown;
      if (!v) return null;
      return (el.getAttribute('type') || '').toLowerCase() === 'password' ? '\u2022'.repeat(v.length) : v;
    }
    if (role === 'combobox' && el.tagName === 'SELECT') { const o = el.options[el.selectedIndex]; return o ? norm(o.label || o.textContent) : null; }
    if (role === 'slider' && el.matches('input')) return String(el.value);
    if (role === 'option' || role === 'tab') { const s = el.getAttribute('aria-selected'); return s === 'true' ? 'selected' : null; }
    return null;
  };
  const toBox = (r) => {
    const x0 = Math.max(0, Math.floor(Math.max(0, r.left) * S)), y0 = Math.max(0, Math.floor(Math.max(0, r.top) * S));
    const x1 = Math.min(W, Math.ceil(Math.min(vw, r.right) * S)), y1 = Math.min(H, Math.ceil(Math.min(vh, r.bottom) * S));
    return (x1 > x0 && y1 > y0) ? [x0, y0, x1, y1] : null;
  };
  const mainRect = (el) => {
    const rs = el.getClientRects();
    if (rs.length <= 1) return el.getBoundingClientRect();
    let best = rs[0];
    for (const r of rs) if (r.width * r.height > best.width * best.height) best = r;
    return best;
  };
  // is what a tap at the centre of r reaches this element (not a dialog, cover or picker over it)?
  const reachable = (el, r, extra) => {
    const cx = (Math.max(0, r.left) + Math.min(vw, r.right)) / 2, cy = (Math.max(0, r.top) + Math.min(vh, r.bottom)) / 2;
    let hit = document.elementFromPoint(cx, cy);
    if (!hit) return true;
    while (hit && hit.shadowRoot) { const h = hit.shadowRoot.elementFromPoint(cx, cy); if (!h || h === hit) break; hit = h; }
    if (hit === el || el.contains(hit) || hit.contains(el)) return true;
    if (extra && extra.some((x) => x === hit || x.contains(hit))) return true;
    return false;
  };
  // a control whose centre is covered but part of which shows (buttons overlapping at random):
  // the cell of a 5x5 grid over it, nearest its centre, that a tap reaches; null where none does
  const reachablePart = (el, r, extra) => {
    const w = r.width / 5, h = r.height / 5;
    let best = null, bestD = Infinity;
    for (let i = 0; i < 5; i++) for (let j = 0; j < 5; j++) {
      const cell = { left: r.left + i * w, top: r.top + j * h, right: r.left + (i + 1) * w, bottom: r.top + (j + 1) * h };
      const d = Math.abs(i - 2) + Math.abs(j - 2);
      if (d < bestD && reachable(el, cell, extra)) { best = cell; bestD = d; }
    }
    return best;
  };
  // an icon: a clickable element that shows only a picture (CSS content or background image) and
  // has no text or accessible name; named after its aria-label or title, else the words of its id
  // (else its class: "send-reply" -> "send reply", "icon trash" -> "trash"), as a sighted user
  // names it by its picture
  const ICON_NOISE = /^(icon|icons|ic|btn|button|fa|glyphicon|clicked|active|selected|hover|pull|left|right|float)$/i;
  const iconName = (el) => {
    if (el.children.length || /\S/.test(el.textContent || '')) return null;
    const s = cs(el);
    if (!/url\(/.test(s.content || '') && !/url\(/.test(s.backgroundImage || '')) return null;
    const named = norm(el.getAttribute('aria-label') || el.getAttribute('title') || '');
    if (named) return named;
    const cls = String(el.className && el.className.baseVal !== undefined ? el.className.baseVal : el.className || '');
    const words = (el.id || cls).split(/[\s\-_]+/).filter((w) => w && !ICON_NOISE.test(w));
    return words.length ? norm(Array.from(new Set(words)).join(' ')) : null;
  };
  // the part of r that the element's scrolling or clipping ancestors let show (an email below
  // the fold of a scrolled inbox is in the layout but not on screen); null where none does
  const CLIPS = /(auto|scroll|hidden|clip)/;
  const unclipped = (el, r) => {
    let x0 = r.left, y0 = r.top, x1 = r.right, y1 = r.bottom;
    for (let p = el.parentElement; p && p !== document.body && p !== document.documentElement; p = p.parentElement) {
      const s = cs(p);
      if (!CLIPS.test(s.overflowX) && !CLIPS.test(s.overflowY)) continue;
      const c = p.getBoundingClientRect();
      if (CLIPS.test(s.overflowX)) { x0 = Math.max(x0, c.left); x1 = Math.min(x1, c.right); }
      if (CLIPS.test(s.overflowY)) { y0 = Math.max(y0, c.top); y1 = Math.min(y1, c.bottom); }
      if (x1 <= x0 || y1 <= y0) return null;
    }
    if (x0 === r.left && y0 === r.top && x1 === r.right && y1 === r.bottom) return r;
    return { left: x0, top: y0, right: x1, bottom: y1, width: x1 - x0, height: y1 - y0 };
  };

  // -- drawn things: SVG shapes, SVG text's colour, and coloured boxes that show no text,
  //    named by what a person sees ("red circle", "light blue"); colours: the basic CSS name
  //    a colour is exactly, else its hue family ("light red", "dark green", "grey")
  const COLOR_NAMES = [['black', 0, 0, 0], ['white', 255, 255, 255], ['grey', 128, 128, 128], ['silver', 192, 192, 192],
    ['red', 255, 0, 0], ['maroon', 128, 0, 0], ['yellow', 255, 255, 0], ['olive', 128, 128, 0], ['lime', 0, 255, 0],
    ['green', 0, 128, 0], ['cyan', 0, 255, 255], ['teal', 0, 128, 128], ['blue', 0, 0, 255], ['navy', 0, 0, 128],
    ['magenta', 255, 0, 255], ['purple', 128, 0, 128], ['orange', 255, 165, 0], ['pink', 255, 192, 203],
    ['brown', 165, 42, 42], ['gold', 255, 215, 0]];
  const rgbaOf = (c) => {
    const m = /rgba?\(\s*([\d.]+)[,\s]+([\d.]+)[,\s]+([\d.]+)(?:\s*[,/]\s*([\d.]+%?))?/.exec(c || '');
    if (!m) return null;
    let a = m[4] === undefined ? 1 : parseFloat(m[4]); if (m[4] && m[4].endsWith('%')) a /= 100;
    return [Math.round(+m[1]), Math.round(+m[2]), Math.round(+m[3]), a];
  };
  const colorName = (c) => {
    const v = rgbaOf(c);
    if (!v || v[3] < 0.5) return null;
    const [r, g, b] = v;
    for (const [n, R, G, B] of COLOR_NAMES) if (r === R && g === G && b === B) return n;
    const mx = Math.max(r, g, b) / 255, mn = Math.min(r, g, b) / 255, l = (mx + mn) / 2, d = mx - mn;
    const sat = d === 0 ? 0 : d / (1 - Math.abs(2 * l - 1));
    if (sat < 0.15 || d < 0.06) return l < 0.15 ? 'black' : l > 0.9 ? 'white' : l < 0.35 ? 'dark grey' : l > 0.7 ? 'light grey' : 'grey';
    let h;
    const R = r / 255, G = g / 255, B = b / 255;
    if (mx === R) h = 60 * (((G - B) / d) % 6); else if (mx === G) h = 60 * ((B - R) / d + 2); else h = 60 * ((R - G) / d + 4);
    if (h < 0) h += 360;
    const fam = h < 15 ? 'red' : h < 45 ? 'orange' : h < 70 ? 'yellow' : h < 165 ? 'green' : h < 195 ? 'cyan' :
                h < 255 ? 'blue' : h < 285 ? 'purple' : h < 335 ? 'magenta' : 'red';
    return (l >= 0.7 ? 'light ' : l <= 0.3 ? 'dark ' : '') + fam;
  };
  const SHAPE_TAGS = new Set(['circle', 'ellipse', 'rect', 'polygon']);
  const isSvg = (el) => typeof SVGElement !== 'undefined' && el instanceof SVGElement;
  const drawnKind = (el) => {
    const t = el.tagName.toLowerCase();
    if (t === 'circle') return 'circle';
    if (t === 'ellipse') { const rx = +el.getAttribute('rx'), ry = +el.getAttribute('ry'); return Math.abs(rx - ry) <= 0.1 * Math.max(rx, ry) ? 'circle' : 'ellipse'; }
    if (t === 'rect') { const b = el.getBoundingClientRect(); return Math.abs(b.width - b.height) <= 0.1 * Math.max(b.width, b.height) ? 'square' : 'rectangle'; }
    if (t === 'polygon') { const n = el.points ? el.points.numberOfItems : 0; return n === 3 ? 'triangle' : n === 4 ? 'quadrilateral' : 'polygon'; }
    return null;
  };
  // "small" / "large": under a tenth of its picture's longer side, or not
  const sizeWord = (el) => {
    const svg = el.ownerSVGElement;
    if (!svg) return '';
    const p = svg.getBoundingClientRect(), h = el.getBoundingClientRect().height;
    return h <= 0 ? '' : h < 0.1 * Math.max(p.width, p.height) ? 'small' : 'large';
  };
  const svgName = (el) => {
    const t = el.querySelector(':scope > title');
    return norm(el.getAttribute('aria-label') || (t ? t.textContent : ''));
  };
  // an element that shows a colour and no text: no role, nothing inside that shows text or has a role
  const showsText = (el) => {
    if (!/\S/.test(el.textContent || '')) return false;
    const range = document.createRange(); range.selectNodeContents(el);
    const b = range.getBoundingClientRect();
    return b.width > 1 && b.height > 1;
  };
  const boxColor = (el, r) => {
    if (r.width < 6 || r.height < 6 || r.width > 0.5 * vw || r.height > 0.5 * vh) return null;
    if (showsText(el) || el.querySelector('input,select,textarea,button,a,img,svg,canvas,video,[role]')) return null;
    const s = cs(el);
    const name = colorName(s.backgroundColor);
    if (!name) return null;
    const bordered = ['Top', 'Right', 'Bottom', 'Left'].some((k) => parseFloat(s['border' + k + 'Width']) > 0 && s['border' + k + 'Style'] !== 'none');
    let under = null;
    for (let p = el.parentElement; p; p = p.parentElement) { const v = rgbaOf(cs(p).backgroundColor); if (v && v[3] >= 0.5) { under = v; break; } }
    const own = rgbaOf(s.backgroundColor), base = under || [255, 255, 255, 1];
    if (!bordered && Math.abs(own[0] - base[0]) + Math.abs(own[1] - base[1]) + Math.abs(own[2] - base[2]) < 30) return null;
    return name;
  };
  const selectedOf = (el) => (el.getAttribute('aria-selected') === 'true' || el.getAttribute('aria-pressed') === 'true' ||
                             (el.classList && el.classList.contains('selected'))) ? 'selected' : null;
  const nodes = [];
  const MAX = args.maxNodes || 400;
  let k = 0;
  const dragOf = __MOUSE_DRAG__;
  const emit = (el, role, label, r, acts, value, focused, enabled, desc) => {
    if (nodes.length >= MAX) return;
    const box = toBox(r);
    if (!box) return;
    if (dragOf(el)) acts = acts.concat(['drag']);
    nodes.push({ id: (el.id ? '#' + el.id : el.tagName.toLowerCase() + ':' + k), role, label: cut(label, 200),
                 bounds: box, enabled, focused, value, actions: acts,
                 desc: desc || (el.tagName === 'TEXTAREA' ? 'textarea' : ''),   // a multi-line text field says so
                 hidden: acts.includes('swipe') ? hiddenOf(el) : '' });
    k++;
  };
  const disabled = (el) => el.disabled === true || el.getAttribute('aria-disabled') === 'true' ||
                           (el.closest && !!el.closest('fieldset[disabled]'));
  // an icon control whose words are hidden (text-indent far off, or aria-hidden): it shows a
  // picture and its own text lies outside its box; named by title / aria-label, else that hidden
  // text, else a direction word of its classes (jQuery UI's spinner: "ui-spinner-up" -> "up")
  const DIRS = new Set(['up', 'down', 'prev', 'previous', 'next', 'left', 'right', 'plus', 'minus', 'close']);
  const pictured = (el) => {
    for (const e of [el, ...el.querySelectorAll('*')]) { const s = cs(e); if (/url\(/.test(s.backgroundImage || '') || /url\(/.test(s.content || '')) return true; }
    return false;
  };
  const hiddenText = (el, r) => {
    const t = norm(el.textContent);
    if (!t) return '';
    const tw = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
    for (let n = tw.nextNode(); n; n = tw.nextNode()) {
      if (!/\S/.test(n.data)) continue;
      const range = document.createRange(); range.selectNodeContents(n);
      const b = range.getBoundingClientRect();
      if (b.width > 1 && b.right > r.left && b.left < r.right && b.bottom > r.top && b.top < r.bottom) return null;
    }
    return t;
  };
  const hiddenIconName = (el, r) => {
    if (r.width < 4 || r.height < 4 || !pictured(el)) return null;
    const hid = hiddenText(el, r);
    if (hid === null) return null;                   // its text shows: not an icon
    const named = norm(el.getAttribute('aria-label') || el.getAttribute('title') || '') || hid;
    if (named) return named;
    const cls = [el, ...el.querySelectorAll('*')].map((e) => String(e.className && e.className.baseVal !== undefined ? e.className.baseVal : e.className || '')).join(' ');
    return cls.split(/[\s\-_]+/).find((w) => DIRS.has(w.toLowerCase())) || null;
  };
  const scrollsItself = (el) => {
    const s = cs(el);
    return (/(auto|scroll)/.test(s.overflowY) && el.scrollHeight > el.clientHeight + 1) ||
           (/(auto|scroll)/.test(s.overflowX) && el.scrollWidth > el.clientWidth + 1);
  };
  // where a node that scrolls by itself hides content: above its box, below it (sign-agreement's
  // and scroll-text-2's text area: how far it is scrolled decides the next step)
  const hiddenOf = (el) => [el.scrollTop > 1 ? 'above' : '',
                            el.scrollHeight - el.clientHeight - el.scrollTop > 1 ? 'below' : ''].filter(Boolean).join(' ');
  const offState = (el) => disabled(el) || !!(el.classList && el.classList.contains('ui-state-disabled'));
  const walk = (root, inClick) => {
    for (let el = root.firstElementChild; el; el = el.nextElementSibling) visit(el, inClick);
    if (root.shadowRoot) for (let el = root.shadowRoot.firstElementChild; el; el = el.nextElementSibling) visit(el, inClick);
  };
  const visit = (el, inClick) => {
    if (nodes.length >= MAX) return;
    const tag = el.tagName;
    if (tag === 'SCRIPT' || tag === 'STYLE' || tag === 'NOSCRIPT' || tag === 'TEMPLATE' || tag === 'HEAD' || tag === 'OPTION') return;
    const hiddenIcon = () => {
      if (!visible(el)) return false;
      const r = el.getBoundingClientRect();
      if (!(r.width > 0 && r.height > 0 && r.right > 0 && r.bottom > 0 && r.left < vw && r.top < vh)) return false;
      const name = hiddenIconName(el, r), ir = name ? unclipped(el, r) : null;
      if (!ir || !reachable(el, ir)) return false;
      emit(el, 'button', name, ir, ['tap'], null, el === active, !offState(el), 'icon');
      return true;
    };
    if (el.getAttribute('aria-hidden') === 'true') {
      // hidden from screen readers, yet a control a finger can press (a spinner's arrows)
      const r0 = roleOf(el);
      if ((tag === 'A' || tag === 'BUTTON' || r0 === 'button' || r0 === 'link') && hiddenIcon()) return;
      return;
    }
    if (!visible(el)) return;
    if (tag === 'A' && !el.hasAttribute('href') && !el.getAttribute('role') && hiddenIcon()) return;
    const role = roleOf(el);
    if (role === 'hidden') return;
    const r = el.getBoundingClientRect();
    const onScreen = r.width > 0 && r.height > 0 && r.right > 0 && r.bottom > 0 && r.left < vw && r.top < vh;
    if (isSvg(el) && SHAPE_TAGS.has(tag.toLowerCase()) && !el.closest('defs,clipPath,mask,pattern,marker,symbol')) {
      // a drawn shape: an image named by its colour and kind ("large red circle"), tappable where it reacts
      if (!onScreen) return;
      const s = cs(el), colour = colorName(s.fill) || colorName(s.stroke);
      const kind = drawnKind(el);
      let mr = unclipped(el, r);
      if (!colour || !kind || !mr) return;
      // an outline (no fill: drag-shapes' box) keeps its whole box where only drawn things of its
      // picture lie over its middle (shapes dropped into it)
      const outlined = !colorName(s.fill) && (() => {
        const h = document.elementFromPoint((mr.left + mr.right) / 2, (mr.top + mr.bottom) / 2);
        return !!h && isSvg(h) && h.ownerSVGElement === el.ownerSVGElement; })();
      if (!outlined && !reachable(el, mr)) { mr = reachablePart(el, mr); if (!mr) return; }
      const label = svgName(el) || [sizeWord(el), colour, kind].filter(Boolean).join(' ');
      emit(el, 'image', label, mr, (inClick || clickable(el)) ? ['tap'] : [], null, el === active, true, 'shape');
      return;
    }
    if (!role && onScreen && !isSvg(el) && el !== document.body && el !== document.documentElement) {
      // a box that shows a colour and no text (a colour swatch, a tile, a face-down card)
      const colour = boxColor(el, r);
      let br = colour ? unclipped(el, r) : null;
      if (br && !reachable(el, br)) br = reachablePart(el, br);
      if (br) {
        const c = inClick || clickable(el);
        emit(el, c ? 'button' : 'image', colour, br, c ? ['tap'] : [], selectedOf(el), el === active, true, 'box');
        return;
      }
    }
    if (role && LEAF.has(role)) {
      if (!onScreen) return;
      const label = nameOf(el, role);
      let mr = unclipped(el, mainRect(el));
      if (!mr) return;
      const labels = el.labels ? Array.from(el.labels) : [];
      if (!reachable(el, mr, labels)) { mr = reachablePart(el, mr, labels); if (!mr) return; }
      const acts = role === 'image' && !(inClick || clickable(el)) ? [] : ['tap'];
      if (el.oncontextmenu) acts.push('long_press');
      if (scrollsItself(el)) acts.push('swipe');     // a text area whose text runs past its box (sign-agreement)
      if (!label && !acts.length) return;
      emit(el, role, label, mr, acts, valueOf(el, role), el === active, !disabled(el));
      return;
    }
    const click = inClick || clickable(el);
    if (!role && click && onScreen) {
      const icon = iconName(el), ir = icon ? unclipped(el, r) : null;
      if (ir && reachable(el, ir)) {
        emit(el, 'button', icon, ir, ['tap'], null, el === active, true, 'icon');
        return;
      }
    }
    const scrolls = scrollsItself(el);
    if (scrolls && onScreen && el !== document.body && el !== document.documentElement && reachable(el, r))
      emit(el, 'list', norm(el.getAttribute('aria-label')), r, ['swipe'], null, el === active, true);
    if (!usedLabels.has(el) && textBlock(el)) {
      // a run of text with only inline, inert markup inside (<b>, <span>...): one node, as a screen reader reads it
      const txt = textOf(el);
      const range = document.createRange();
      range.selectNodeContents(el);
      // a text that is itself a drag handle (jQuery UI's draggable box "s") is as big as its element
      const b = unclipped(el, dragOf(el) === el ? r : range.getBoundingClientRect()) || { width: 0, height: 0 };
      if (txt && b.width > 0 && b.height > 0 && b.right > 0 && b.bottom > 0 && b.left < vw && b.top < vh && reachable(el, b))
        emit(el, role === 'header' ? 'header' : 'text', txt, b, click ? ['tap'] : [], null, el === active, true,
             isSvg(el) ? [sizeWord(el), colorName(cs(el).fill)].filter(Boolean).join(' ') : '');
      return;
    }
    if (!usedLabels.has(el)) {
      let txt = '', box = null;
      for (const n of el.childNodes) {
        if (n.nodeType !== 3 || !/\S/.test(n.data)) continue;
        txt += ' ' + n.data;
        const range = document.createRange();
        range.selectNodeContents(n);
        const b = range.getBoundingClientRect();
        if (b.width > 0 && b.height > 0)
          box = box ? { left: Math.min(box.left, b.left), top: Math.min(box.top, b.top), right: Math.max(box.right, b.right), bottom: Math.max(box.bottom, b.bottom) } : { left: b.left, top: b.top, right: b.right, bottom: b.bottom };
      }
      txt = norm(txt);
      if (box) box = unclipped(el, box);
      if (txt && box && box.right > 0 && box.bottom > 0 && box.left < vw && box.top < vh && reachable(el, box)) {
        emit(el, role === 'header' ? 'header' : 'text', txt, box, click ? ['tap'] : [], null, el === active, true);
      }
    }
    walk(el, click);
  };
  // labels consumed as names are known only after their control is visited; visit controls first
  for (const c of document.querySelectorAll('input,select,textarea')) { if (c.labels) for (const l of c.labels) usedLabels.add(l);
    const p = c.previousElementSibling; if (p && p.tagName === 'LABEL' && !p.htmlFor && !p.querySelector(CONTROL)) usedLabels.add(p); }
  if (document.body) walk(document.body, false);
  const picker = document.querySelector('[data-navrl-picker]');
  let state = null;
  if (stateFn) { try { state = stateFn(); } catch (e) { state = { error: String(e && e.message || e) }; } }
  const N = window.__navrl;
  return { url: location.href, title: document.title, nodes, state, picker: !!picker,
           ready: document.readyState !== 'loading' && !(N && N.leaving),
           sig: N ? N.sig() : [0, 0, location.href, Math.round(scrollX), Math.round(scrollY)].join('|'),
           vw, vh };
}
""".replace("__MOUSE_DRAG__", MOUSE_DRAG_JS.strip())
