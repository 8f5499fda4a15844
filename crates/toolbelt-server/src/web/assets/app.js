'use strict';
// The toolbelt page: tools, call log, todos, planner, agent runs, cron jobs, checkpoints, and the questions
// agent runs wait on. Plain DOM, no framework; every request goes to this server with the session cookie.
(function () {
  var SVG_NS = 'http://www.w3.org/2000/svg';

  // ------------------------------------------------------------ helpers

  function $(id) { return document.getElementById(id); }

  // el('div', {class: 'x', text: 'hi'}, [children])
  function el(tag, attrs, children) {
    var node = document.createElement(tag);
    if (attrs) {
      Object.keys(attrs).forEach(function (k) {
        var v = attrs[k];
        if (v === undefined || v === null || v === false) return;
        if (k === 'text') node.textContent = v;
        else if (k === 'class') node.className = v;
        else if (k.slice(0, 2) === 'on') node.addEventListener(k.slice(2), v);
        else if (v === true) node.setAttribute(k, '');
        else node.setAttribute(k, v);
      });
    }
    (children || []).forEach(function (c) {
      if (c === null || c === undefined) return;
      node.appendChild(typeof c === 'string' ? document.createTextNode(c) : c);
    });
    return node;
  }

  function svg(tag, attrs, children) {
    var node = document.createElementNS(SVG_NS, tag);
    Object.keys(attrs || {}).forEach(function (k) {
      if (k === 'text') node.textContent = attrs[k];
      else node.setAttribute(k, attrs[k]);
    });
    (children || []).forEach(function (c) { node.appendChild(c); });
    return node;
  }

  function clear(node) { while (node.firstChild) node.removeChild(node.firstChild); return node; }

  function api(path, options) {
    options = options || {};
    options.credentials = 'same-origin';
    options.headers = Object.assign({ Accept: 'application/json' }, options.headers || {});
    return fetch(path, options).then(function (response) {
      if (response.status === 401) {
        window.location.replace('/');
        throw new Error('the session has ended; log in again');
      }
      return response.json().then(function (body) {
        if (!response.ok && !(body && body.status)) {
          var message = body && body.error ? body.error.message : response.statusText;
          var error = new Error(message);
          // What a refusal carries besides its message (the conflicts of a restore).
          error.status = response.status;
          error.body = body;
          throw error;
        }
        return body;
      });
    });
  }

  function showError(target, error) {
    clear(target).appendChild(el('p', { class: 'error', role: 'alert', text: String(error.message || error) }));
  }

  var units = [['year', 31536e6], ['month', 2592e6], ['week', 6048e5], ['day', 864e5],
    ['hour', 36e5], ['minute', 6e4], ['second', 1e3]];
  var relative = window.Intl && Intl.RelativeTimeFormat ? new Intl.RelativeTimeFormat(undefined, { numeric: 'auto' }) : null;

  function relativeTime(ms) {
    var diff = ms - Date.now();
    for (var i = 0; i < units.length; i++) {
      if (Math.abs(diff) >= units[i][1] || units[i][0] === 'second') {
        var n = Math.round(diff / units[i][1]);
        if (relative) return relative.format(n, units[i][0]);
        return Math.abs(n) + ' ' + units[i][0] + (Math.abs(n) === 1 ? '' : 's') + (n < 0 ? ' ago' : ' from now');
      }
    }
    return '';
  }

  // A relative time with the absolute time on hover (and for screen readers).
  function timeEl(ms) {
    if (ms === null || ms === undefined) return el('span', { class: 'muted', text: '—' });
    var d = new Date(ms);
    return el('time', { datetime: d.toISOString(), title: d.toLocaleString(), 'data-ms': String(ms), class: 'rel', text: relativeTime(ms) });
  }

  setInterval(function () {
    var times = document.querySelectorAll('time.rel');
    for (var i = 0; i < times.length; i++) times[i].textContent = relativeTime(Number(times[i].getAttribute('data-ms')));
  }, 30000);

  function bytes(n) {
    if (n < 1024) return n + ' B';
    if (n < 1048576) return (n / 1024).toFixed(1) + ' KiB';
    return (n / 1048576).toFixed(1) + ' MiB';
  }

  function badge(text, cls) { return el('span', { class: 'badge' + (cls ? ' ' + cls : ''), text: text }); }

  // A JSON value as a collapsible tree.
  function tree(value, key, open) {
    var label = key === undefined ? [] : [el('span', { class: 'key', text: key }), ': '];
    if (value !== null && typeof value === 'object') {
      var isArray = Array.isArray(value);
      var keys = Object.keys(value);
      var details = el('details', open ? { open: true } : null, [
        el('summary', null, label.concat([isArray ? '[' + keys.length + ']' : '{' + keys.length + '}']))
      ]);
      var list = el('ul');
      keys.forEach(function (k) { list.appendChild(el('li', null, [tree(value[k], isArray ? k : JSON.stringify(k).slice(1, -1), false)])); });
      details.appendChild(list);
      return details;
    }
    var cls = value === null ? 'null' : typeof value === 'string' ? 'str' : typeof value === 'number' ? 'num' : 'bool';
    return el('span', null, label.concat([el('span', { class: cls, text: JSON.stringify(value) })]));
  }

  // ------------------------------------------------------------ tabs

  var tabs = ['tools', 'calls', 'todos', 'planner', 'runs', 'cron', 'checkpoints'];
  // Tabs read again each time they are shown.
  var reload = { todos: loadTodos, planner: loadPlanner, runs: loadRuns, cron: loadCron,
    checkpoints: function () { loadCheckpoints(false); } };
  var loaded = {};

  function selectTab(name, focus) {
    tabs.forEach(function (t) {
      var tab = $('tab-' + t);
      var selected = t === name;
      tab.setAttribute('aria-selected', selected ? 'true' : 'false');
      tab.tabIndex = selected ? 0 : -1;
      $('panel-' + t).hidden = !selected;
      if (selected && focus) tab.focus();
    });
    if (!loaded[name]) {
      loaded[name] = true;
      ({ tools: loadTools, calls: startCalls }[name] || reload[name])();
    } else if (reload[name]) reload[name]();
    if (window.location.hash !== '#' + name) history.replaceState(null, '', '#' + name);
  }

  tabs.forEach(function (t, i) {
    var tab = $('tab-' + t);
    tab.addEventListener('click', function () { selectTab(t, false); });
    tab.addEventListener('keydown', function (e) {
      var next = null;
      if (e.key === 'ArrowRight') next = tabs[(i + 1) % tabs.length];
      else if (e.key === 'ArrowLeft') next = tabs[(i + tabs.length - 1) % tabs.length];
      else if (e.key === 'Home') next = tabs[0];
      else if (e.key === 'End') next = tabs[tabs.length - 1];
      if (next) { e.preventDefault(); selectTab(next, true); }
    });
  });

  // ------------------------------------------------------------ tools

  var tools = [];
  var current = null;

  function loadTools() {
    api('/v1/tools').then(function (body) {
      tools = body.tools;
      var names = $('tool-names');
      tools.forEach(function (t) { names.appendChild(el('option', { value: t.name })); });
      renderCatalogue();
    }).catch(function (e) { showError($('catalogue'), e); });
  }

  function renderCatalogue() {
    var filter = $('tool-filter').value.trim().toLowerCase();
    var byCategory = {};
    tools.forEach(function (t) {
      if (filter && t.name.toLowerCase().indexOf(filter) < 0 && (t.title || '').toLowerCase().indexOf(filter) < 0) return;
      (byCategory[t.category] = byCategory[t.category] || []).push(t);
    });
    var root = clear($('catalogue'));
    Object.keys(byCategory).sort().forEach(function (category) {
      root.appendChild(el('h3', { text: category }));
      var list = el('ul');
      byCategory[category].forEach(function (t) {
        list.appendChild(el('li', null, [el('button', {
          type: 'button', 'data-tool': t.name, 'aria-current': current && current.name === t.name ? 'true' : 'false',
          onclick: function () { showTool(t.name); }
        }, [el('span', { class: 'mono', text: t.name }), el('span', { class: 'title', text: t.title })])]));
      });
      root.appendChild(list);
    });
    if (!root.firstChild) root.appendChild(el('p', { class: 'muted', text: 'No tool matches.' }));
  }

  $('tool-filter').addEventListener('input', renderCatalogue);

  function showTool(name) {
    var spec = tools.filter(function (t) { return t.name === name; })[0];
    if (!spec) return;
    current = spec;
    renderCatalogue();
    var root = clear($('tool-detail'));
    var hints = Object.keys(spec.hints || {}).filter(function (k) { return spec.hints[k] === true; });
    root.appendChild(el('div', { class: 'card' }, [
      el('h2', { id: 'tool-heading' }, [spec.title + ' ', el('code', { text: spec.name })]),
      el('p', null, [badge(spec.category)].concat(hints.map(function (h) { return badge(h.replace(/_/g, ' ')); }))
        .concat((spec.permissions || []).map(function (p) { return badge(p); }))),
      el('details', null, [el('summary', { text: 'Description' }), el('div', { class: 'description', text: spec.description })])
    ]));

    var form = buildForm(spec.input_schema || { type: 'object' });
    var raw = el('textarea', { id: 'raw-args', rows: '10', 'aria-label': 'Arguments as JSON', spellcheck: 'false' });
    raw.hidden = true;
    var rawToggle = el('input', { type: 'checkbox', id: 'raw-mode' });
    var result = el('div', { id: 'result', 'aria-live': 'polite' });
    var run = el('button', { type: 'submit', class: 'primary', id: 'run', text: 'Run' });
    rawToggle.addEventListener('change', function () {
      if (rawToggle.checked) {
        try { raw.value = JSON.stringify(form.read(), null, 2); } catch (e) { raw.value = '{}'; }
      }
      raw.hidden = !rawToggle.checked;
      form.el.hidden = rawToggle.checked;
    });
    var formEl = el('form', { id: 'tool-form', novalidate: true }, [
      el('p', { class: 'row' }, [el('label', null, [rawToggle, 'Raw JSON'])]),
      form.el, raw, el('p', null, [run])
    ]);
    formEl.addEventListener('submit', function (e) {
      e.preventDefault();
      var args;
      try {
        args = rawToggle.checked ? JSON.parse(raw.value || '{}') : form.read();
      } catch (err) {
        showError(result, new Error('The arguments are not valid: ' + err.message));
        return;
      }
      run.disabled = true;
      clear(result).appendChild(el('p', { class: 'muted', text: 'Running…' }));
      api('/v1/tools/' + encodeURIComponent(spec.name), {
        method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(args)
      }).then(function (envelope) { renderEnvelope(result, envelope); })
        .catch(function (err) { showError(result, err); })
        .then(function () { run.disabled = false; });
    });
    root.appendChild(el('div', { class: 'card' }, [el('h3', { text: 'Arguments' }), formEl, result]));
    root.appendChild(schemaCard(spec));
  }

  function renderEnvelope(target, env) {
    var out = clear(target);
    out.appendChild(el('h3', null, ['Result ', badge(env.status, 'status-' + env.status)]));
    if (env.error) {
      out.appendChild(el('div', { class: 'error', role: 'alert' }, [
        el('p', null, [el('strong', { text: env.error.code + ': ' }), env.error.message]),
        env.error.hint ? el('p', null, ['Hint: ', env.error.hint]) : null
      ]));
    }
    out.appendChild(el('h4', { text: 'Text (what the model reads)' }));
    out.appendChild(el('pre', { class: 'envelope-text', text: env.text }));
    if (env.data !== null && env.data !== undefined) {
      out.appendChild(el('h4', { text: 'Data' }));
      out.appendChild(el('div', { class: 'tree' }, [tree(env.data, undefined, true)]));
    }
    out.appendChild(el('h4', { text: 'Stats' }));
    var stats = el('p', { class: 'stats' });
    Object.keys(env.stats || {}).forEach(function (k) {
      stats.appendChild(el('span', null, [el('span', { class: 'muted', text: k.replace(/_/g, ' ') + ': ' }), String(env.stats[k])]));
    });
    out.appendChild(stats);
    out.appendChild(el('details', null, [el('summary', { text: 'Context' }), el('div', { class: 'tree' }, [tree(env.context, undefined, true)])]));
  }

  function schemaCard(spec) {
    var select = el('select', { id: 'schema-format', 'aria-label': 'Export format' });
    var pre = el('pre', { id: 'schema-text', tabindex: '0' });
    var status = el('span', { class: 'muted', 'aria-live': 'polite' });
    var formats = {};
    function show() {
      var v = formats[select.value];
      pre.textContent = typeof v === 'string' ? v : JSON.stringify(v, null, 2);
    }
    select.addEventListener('change', show);
    var copy = el('button', {
      type: 'button', id: 'schema-copy', text: 'Copy', onclick: function () {
        var text = pre.textContent;
        var done = function () { status.textContent = 'Copied.'; };
        if (navigator.clipboard && navigator.clipboard.writeText) {
          navigator.clipboard.writeText(text).then(done, function () { selectText(pre); status.textContent = 'Selected: press Ctrl+C.'; });
        } else { selectText(pre); status.textContent = 'Selected: press Ctrl+C.'; }
      }
    });
    api('/v1/tools/' + encodeURIComponent(spec.name) + '/schemas').then(function (body) {
      body.formats.forEach(function (f) {
        formats[f.format] = f.schema;
        select.appendChild(el('option', { value: f.format, text: f.format }));
      });
      show();
    }).catch(function (e) { pre.textContent = String(e.message); });
    return el('div', { class: 'card' }, [el('h3', { text: 'Schema' }), el('p', { class: 'row' }, [select, copy, status]), pre]);
  }

  function selectText(node) {
    var range = document.createRange();
    range.selectNodeContents(node);
    var sel = window.getSelection();
    sel.removeAllRanges();
    sel.addRange(range);
  }

  // ------------------------------------------------------------ forms from schemas

  var fieldCount = 0;

  function buildForm(root) {
    function resolve(schema) {
      var seen = 0;
      while (schema && schema.$ref && seen++ < 20) {
        var path = schema.$ref.replace(/^#\//, '').split('/');
        var target = root;
        path.forEach(function (p) { target = target ? target[p.replace(/~1/g, '/').replace(/~0/g, '~')] : undefined; });
        schema = Object.assign({}, target || {}, schema.description ? { description: schema.description } : {}, schema.default !== undefined ? { default: schema.default } : {});
      }
      return schema || {};
    }
    // Option<T> is anyOf/oneOf [T, null] or type [T, "null"]: the T.
    function simplify(schema) {
      schema = resolve(schema);
      var alts = schema.anyOf || schema.oneOf;
      if (alts) {
        var real = alts.filter(function (a) { return resolve(a).type !== 'null'; }).map(resolve);
        // A choice of constants is an enum.
        if (real.length > 1 && real.every(function (a) { return a.const !== undefined; })) {
          return Object.assign({}, schema, { anyOf: undefined, oneOf: undefined, type: typeof real[0].const,
            enum: real.map(function (a) { return a.const; }),
            enumTitles: real.map(function (a) { return a.description || ''; }) });
        }
        if (real.length === 1) {
          var inner = simplify(real[0]);
          return Object.assign({}, inner, {
            description: schema.description || inner.description,
            default: schema.default !== undefined ? schema.default : inner.default,
            title: schema.title || inner.title
          });
        }
      }
      if (Array.isArray(schema.type)) {
        var types = schema.type.filter(function (t) { return t !== 'null'; });
        if (types.length === 1) schema = Object.assign({}, schema, { type: types[0] });
      }
      if (!schema.type && schema.enum) schema = Object.assign({ type: 'string' }, schema);
      if (!schema.type && schema.properties) schema = Object.assign({ type: 'object' }, schema);
      return schema;
    }

    function labelled(name, schema, required, control, id) {
      var label = el('label', { for: id }, [el('span', { class: 'mono', text: name }), required ? el('span', { class: 'req', title: 'required', text: ' *' }) : null]);
      var helpText = [];
      if (schema.description) helpText.push(schema.description);
      if (schema.default !== undefined && schema.default !== null) helpText.push('Default: ' + JSON.stringify(schema.default));
      var help = helpText.length ? el('p', { class: 'help', id: id + '-help', text: helpText.join('\n') }) : null;
      if (help) control.setAttribute('aria-describedby', id + '-help');
      if (required) control.setAttribute('aria-required', 'true');
      return el('div', { class: 'field' }, [label, help, control]);
    }

    // Returns {el, read} where read() gives {set: bool, value}.
    function field(name, schema, required) {
      schema = simplify(schema);
      var id = 'f' + (++fieldCount) + '-' + String(name).replace(/[^A-Za-z0-9_-]/g, '');
      var type = schema.type;
      if (schema.enum) {
        var select = el('select', { id: id, name: name });
        if (!required || schema.default === undefined) select.appendChild(el('option', { value: '', text: required ? 'choose…' : '(not set)' }));
        schema.enum.forEach(function (v, i) {
          var title = schema.enumTitles && schema.enumTitles[i];
          select.appendChild(el('option', { value: String(i), text: String(v) + (title ? ' — ' + title : ''), selected: schema.default === v }));
        });
        return { el: labelled(name, schema, required, select, id), read: function () {
          return select.value === '' ? { set: false } : { set: true, value: schema.enum[Number(select.value)] };
        } };
      }
      if (type === 'boolean') {
        if (required) {
          var box = el('input', { type: 'checkbox', id: id, name: name, checked: schema.default === true });
          return { el: labelled(name, schema, required, box, id), read: function () { return { set: true, value: box.checked }; } };
        }
        var tri = el('select', { id: id, name: name }, [el('option', { value: '', text: '(not set)' }), el('option', { value: 'true', text: 'true' }), el('option', { value: 'false', text: 'false' })]);
        return { el: labelled(name, schema, required, tri, id), read: function () {
          return tri.value === '' ? { set: false } : { set: true, value: tri.value === 'true' };
        } };
      }
      if (type === 'integer' || type === 'number') {
        var num = el('input', { type: 'number', id: id, name: name, step: type === 'integer' ? '1' : 'any',
          min: schema.minimum, max: schema.maximum, placeholder: schema.default !== undefined && schema.default !== null ? String(schema.default) : null });
        return { el: labelled(name, schema, required, num, id), read: function () {
          if (num.value.trim() === '') return { set: false };
          var n = Number(num.value);
          if (isNaN(n)) throw new Error(name + ' is not a number');
          return { set: true, value: n };
        } };
      }
      if (type === 'string') {
        var long = /content|thought|text|string|patch|description|command|note|prompt|body/i.test(name) || (schema.maxLength || 0) > 200;
        var input = long ? el('textarea', { id: id, name: name, rows: '4', spellcheck: 'false' }) : el('input', { type: 'text', id: id, name: name });
        if (schema.default !== undefined && schema.default !== null) input.setAttribute('placeholder', String(schema.default));
        return { el: labelled(name, schema, required, input, id), read: function () {
          return input.value === '' ? { set: false } : { set: true, value: input.value };
        } };
      }
      if (type === 'object' && schema.properties) {
        var obj = object(schema, name);
        var fs = el('fieldset', null, [el('legend', null, [el('span', { class: 'mono', text: name }), required ? el('span', { class: 'req', text: ' *' }) : null]),
          schema.description ? el('p', { class: 'help', text: schema.description }) : null, obj.el]);
        return { el: fs, read: function () {
          var v = obj.read();
          return !required && Object.keys(v).length === 0 ? { set: false } : { set: true, value: v };
        } };
      }
      if (type === 'array' && schema.items && !Array.isArray(schema.items)) {
        return array(name, schema, required, id);
      }
      // Anything else: JSON.
      var json = el('textarea', { id: id, name: name, rows: '3', spellcheck: 'false', placeholder: 'JSON' });
      return { el: labelled(name, schema, required, json, id), read: function () {
        if (json.value.trim() === '') return { set: false };
        try { return { set: true, value: JSON.parse(json.value) }; } catch (e) { throw new Error(name + ': ' + e.message); }
      } };
    }

    function array(name, schema, required, id) {
      var items = [];
      var list = el('div', { class: 'array-items' });
      var add = el('button', { type: 'button', text: 'Add item', 'aria-label': 'Add an item to ' + name });
      function addItem() {
        var index = items.length;
        var f = field(name + '[' + index + ']', schema.items, true);
        var entry = { f: f };
        var remove = el('button', { type: 'button', text: 'Remove', 'aria-label': 'Remove item ' + (index + 1) + ' of ' + name });
        var row = el('div', { class: 'array-item' }, [f.el, remove]);
        remove.addEventListener('click', function () {
          items.splice(items.indexOf(entry), 1);
          list.removeChild(row);
          add.focus();
        });
        items.push(entry);
        list.appendChild(row);
      }
      add.addEventListener('click', function () {
        addItem();
        var inputs = list.lastChild.querySelectorAll('input, select, textarea');
        if (inputs.length) inputs[0].focus();
      });
      var fs = el('fieldset', { id: id }, [el('legend', null, [el('span', { class: 'mono', text: name }), ' (list)', required ? el('span', { class: 'req', text: ' *' }) : null]),
        schema.description ? el('p', { class: 'help', text: schema.description }) : null, list, add]);
      return { el: fs, read: function () {
        if (!items.length && !required) return { set: false };
        return { set: true, value: items.map(function (i) { var r = i.f.read(); return r.set ? r.value : null; }) };
      } };
    }

    function object(schema) {
      var required = schema.required || [];
      var fields = Object.keys(schema.properties || {}).map(function (key) {
        return { key: key, f: field(key, schema.properties[key], required.indexOf(key) >= 0) };
      });
      return {
        el: el('div', null, fields.map(function (x) { return x.f.el; })),
        read: function () {
          var out = {};
          fields.forEach(function (x) { var r = x.f.read(); if (r.set) out[x.key] = r.value; });
          return out;
        }
      };
    }

    var top = object(simplify(root));
    if (!Object.keys(simplify(root).properties || {}).length) {
      top.el.appendChild(el('p', { class: 'muted', text: 'This tool takes no arguments.' }));
    }
    return top;
  }

  // ------------------------------------------------------------ call log

  var nextBefore = null;
  var source = null;

  function callFilters() {
    var q = new URLSearchParams();
    var tool = $('f-tool').value.trim();
    if (tool) q.set('tool', tool);
    if ($('f-status').value) q.set('status', $('f-status').value);
    if ($('f-since').value) q.set('since', String(new Date($('f-since').value).getTime()));
    if ($('f-until').value) q.set('until', String(new Date($('f-until').value).getTime()));
    return q;
  }

  function matches(call) {
    var q = callFilters();
    if (q.get('tool') && q.get('tool') !== call.tool) return false;
    if (q.get('status') && q.get('status') !== call.status) return false;
    if (q.get('since') && call.at_ms < Number(q.get('since'))) return false;
    if (q.get('until') && call.at_ms >= Number(q.get('until'))) return false;
    return true;
  }

  function callRow(c, fresh) {
    var args = c.args || '';
    return el('tr', { class: fresh ? 'fresh' : null, 'data-call': String(c.id) }, [
      el('td', null, [timeEl(c.at_ms)]),
      el('td', { class: 'mono', text: c.tool }),
      el('td', null, [badge(c.status, 'status-' + c.status), c.error_code ? el('span', { class: 'mono muted', text: ' ' + c.error_code }) : null]),
      el('td', { text: c.duration_ms + ' ms' }),
      el('td', { text: bytes(c.bytes_out) }),
      el('td', { class: 'args' }, [el('details', null, [el('summary', { text: args }), el('pre', { text: prettyArgs(args) })])])
    ]);
  }

  function prettyArgs(args) {
    try { return JSON.stringify(JSON.parse(args), null, 2); } catch (e) { return args; }
  }

  function loadCalls(more) {
    var q = callFilters();
    if (more && nextBefore !== null) q.set('before', String(nextBefore));
    var body = $('calls');
    if (!more) clear(body);
    return api('/v1/calls?' + q.toString()).then(function (page) {
      page.calls.forEach(function (c) { body.appendChild(callRow(c, false)); });
      nextBefore = page.next_before;
      $('calls-more').hidden = nextBefore === null;
      $('calls-empty').hidden = body.childNodes.length > 0;
    }).catch(function (e) { showError($('calls-caption'), e); });
  }

  function startCalls() {
    loadCalls(false).then(function () {
      if (!window.EventSource) return;
      source = new EventSource('/v1/calls/stream');
      source.addEventListener('open', function () { $('live').className = 'live on'; $('live').textContent = 'live'; });
      source.addEventListener('error', function () { $('live').className = 'live off'; $('live').textContent = 'reconnecting'; });
      source.addEventListener('calls', function (e) {
        var calls = JSON.parse(e.data);
        var body = $('calls');
        calls.forEach(function (c) {
          if (!matches(c) || body.querySelector('tr[data-call="' + c.id + '"]')) return;
          body.insertBefore(callRow(c, true), body.firstChild);
        });
        $('calls-empty').hidden = body.childNodes.length > 0;
      });
    });
  }

  $('call-filters').addEventListener('submit', function (e) { e.preventDefault(); nextBefore = null; loadCalls(false); });
  $('f-clear').addEventListener('click', function () {
    ['f-tool', 'f-status', 'f-since', 'f-until'].forEach(function (id) { $(id).value = ''; });
    nextBefore = null;
    loadCalls(false);
  });
  $('calls-more').addEventListener('click', function () { loadCalls(true); });

  // ------------------------------------------------------------ todos

  // A todo list as the todo tools render it: done struck through, in progress bold.
  function todoItem(t) {
    var status = String(t.status || '');
    var key = status.toLowerCase().replace(/[\s_-]/g, '');
    var title = key === 'done' || key === 'completed' ? el('s', { text: t.title })
      : key === 'inprogress' ? el('strong', { text: t.title }) : document.createTextNode(t.title);
    return el('li', { 'data-status': status }, [title, el('span', { class: 'muted', text: ' [' + status + ']' })]);
  }

  function loadTodos() {
    var root = $('todos');
    api('/v1/todos').then(function (body) {
      clear(root);
      if (!body.lists.length) { root.appendChild(el('p', { class: 'muted', text: 'No todo lists yet.' })); return; }
      var byWorkspace = {};
      body.lists.forEach(function (l) { (byWorkspace[l.workspace] = byWorkspace[l.workspace] || []).push(l); });
      Object.keys(byWorkspace).sort().forEach(function (ws) {
        var section = el('section', { class: 'card' }, [el('h3', { class: 'mono', text: ws || '(no workspace)' })]);
        byWorkspace[ws].forEach(function (l) {
          section.appendChild(el('h4', null, [l.name + ' ', el('span', { class: 'muted' }, ['updated ', timeEl(l.updated_at)])]));
          section.appendChild(l.todos.length ? el('ul', null, l.todos.map(todoItem)) : el('p', { class: 'muted', text: 'Empty.' }));
        });
        root.appendChild(section);
      });
    }).catch(function (e) { showError(root, e); });
  }
  $('todos-refresh').addEventListener('click', loadTodos);

  // ------------------------------------------------------------ planner

  var projectNames = {};

  function loadPlanner() {
    loadProjects().then(loadTasks);
    loadGoals();
    loadMood();
  }
  $('planner-refresh').addEventListener('click', loadPlanner);

  function loadProjects() {
    var root = $('projects');
    return api('/v1/planner/projects?limit=200').then(function (body) {
      clear(root);
      var select = $('t-project');
      var chosen = select.value;
      while (select.options.length > 1) select.remove(1);
      if (!body.items.length) root.appendChild(el('p', { class: 'muted', text: 'No projects yet.' }));
      body.items.forEach(function (item) {
        var p = item.project;
        var s = item.stats;
        projectNames[p.id] = p.name;
        select.appendChild(el('option', { value: p.id, text: p.name, selected: chosen === p.id }));
        var pct = Math.round(s.completion_rate * 100);
        root.appendChild(el('article', { class: 'card project', 'data-project': p.id }, [
          el('h4', null, [p.name + ' ', badge(p.status)]),
          p.description ? el('p', { text: p.description }) : null,
          el('label', { for: 'progress-' + p.id, class: 'muted', text: pct + '% complete' }),
          el('progress', { id: 'progress-' + p.id, max: '100', value: String(pct) }),
          el('p', { class: 'stats' }, [
            el('span', { text: s.completed + ' done' }), el('span', { text: s.pending + ' pending' }),
            el('span', { text: s.total + ' tasks' }),
            el('span', { class: s.overdue_count ? 'error' : 'muted', text: s.overdue_count + ' overdue' })
          ]),
          s.overdue.length ? el('ul', null, s.overdue.map(function (o) { return el('li', null, [o.title + ' — due ', timeEl(o.due_at)]); })) : null,
          s.goals.length ? el('p', null, ['Goals: '].concat(s.goals.map(function (g) { return badge(g.title + ' (' + g.stage + ')'); }))) : null,
          el('p', { class: 'muted' }, ['Created ', timeEl(p.created_at)])
        ]));
      });
    }).catch(function (e) { showError(root, e); });
  }

  function loadGoals() {
    var root = $('goals');
    api('/v1/planner/goals?limit=200').then(function (page) {
      clear(root);
      var stages = ['life', 'yearly', 'quarter'];
      stages.forEach(function (stage) {
        var goals = page.items.filter(function (g) { return g.stage === stage; });
        root.appendChild(el('div', { class: 'card' }, [el('h4', { text: stage }),
          goals.length ? el('ul', null, goals.map(function (g) {
            return el('li', null, [g.title, g.deadline ? el('span', { class: 'muted', text: ' by ' + g.deadline }) : null]);
          })) : el('p', { class: 'muted', text: 'None.' })]));
      });
    }).catch(function (e) { showError(root, e); });
  }

  function loadTasks() {
    var q = new URLSearchParams({ limit: '200' });
    if ($('t-project').value) q.set('project', $('t-project').value);
    if ($('t-status').value) q.set('status', $('t-status').value);
    if ($('t-priority').value) q.set('priority', $('t-priority').value);
    var body = $('tasks');
    api('/v1/planner/tasks?' + q.toString()).then(function (page) {
      clear(body);
      if (!page.items.length) body.appendChild(el('tr', null, [el('td', { colspan: '5', class: 'muted', text: 'No tasks.' })]));
      page.items.forEach(function (t) {
        body.appendChild(el('tr', null, [
          el('td', null, [t.status === 'completed' ? el('s', { text: t.title }) : t.title]),
          el('td', { text: t.project_id ? (projectNames[t.project_id] || t.project_id) : '—' }),
          el('td', { text: t.priority }),
          el('td', { text: t.status }),
          el('td', null, [timeEl(t.due_at)])
        ]));
      });
    }).catch(function (e) { showError(body, e); });
  }
  $('task-filters').addEventListener('submit', function (e) { e.preventDefault(); loadTasks(); });

  function utcOffset() {
    var m = -new Date().getTimezoneOffset();
    var sign = m < 0 ? '-' : '+';
    m = Math.abs(m);
    return sign + String(Math.floor(m / 60)).padStart(2, '0') + ':' + String(m % 60).padStart(2, '0');
  }

  function loadMood() {
    var range = $('mood-range').value;
    var days = { week: 7, month: 30, quarter: 90 }[range];
    var since = new Date(Date.now() - (days - 1) * 864e5);
    var sinceText = since.getFullYear() + '-' + String(since.getMonth() + 1).padStart(2, '0') + '-' + String(since.getDate()).padStart(2, '0');
    var offset = utcOffset();
    Promise.all([
      api('/v1/planner/reviews?' + new URLSearchParams({ since: sinceText, limit: '200', utc_offset: offset })),
      api('/v1/planner/patterns?' + new URLSearchParams({ range: range, utc_offset: offset }))
    ]).then(function (answers) {
      var reviews = answers[0].items;
      var patterns = answers[1];
      drawMood($('mood'), reviews, since.getTime() - since.getHours() * 36e5, Date.now(), patterns);
      var tags = clear($('tags'));
      if (patterns.tags && patterns.tags.length) {
        tags.appendChild(el('p', null, ['Tags: '].concat(patterns.tags.map(function (t) {
          var mood = t.mean_mood !== null && t.mean_mood !== undefined ? ', mood ' + t.mean_mood : '';
          return badge(t.tag + ' ×' + t.count + mood);
        }))));
      }
      var list = clear($('reviews'));
      if (!reviews.length) list.appendChild(el('p', { class: 'muted', text: 'No reviews in this range.' }));
      reviews.forEach(function (r) {
        list.appendChild(el('article', { class: 'card' }, [
          el('p', null, [timeEl(Date.parse(r.date)), ' ', badge(r.type), r.mood !== null ? badge('mood ' + r.mood) : null]
            .concat(r.tags.map(function (t) { return badge('#' + t); }))),
          el('p', { class: 'description', text: r.content })
        ]));
      });
    }).catch(function (e) { showError($('mood'), e); });
  }
  $('mood-range').addEventListener('change', loadMood);

  // Mood (1 to 10) over time as an SVG line, one dot per review with a mood.
  function drawMood(target, reviews, start, end, patterns) {
    clear(target);
    var points = reviews.filter(function (r) { return r.mood !== null && r.mood !== undefined; })
      .map(function (r) { return { t: Date.parse(r.date), mood: r.mood, tags: r.tags, text: r.content }; })
      .sort(function (a, b) { return a.t - b.t; });
    if (!points.length) { target.appendChild(el('p', { class: 'muted', text: 'No mood recorded in this range.' })); return; }
    var W = 640, H = 220, L = 34, R = 10, T = 10, B = 28;
    var x = function (t) { return L + (W - L - R) * (end === start ? 0.5 : (t - start) / (end - start)); };
    var y = function (m) { return T + (H - T - B) * (1 - (m - 1) / 9); };
    var trend = patterns.mood && patterns.mood.trend ? patterns.mood.trend.direction : null;
    var avg = patterns.mood && patterns.mood.average !== null && patterns.mood.average !== undefined ? patterns.mood.average : null;
    var label = 'Mood over time: ' + points.length + ' reviews' + (avg !== null ? ', average ' + avg : '') + (trend ? ', ' + trend : '');
    var chart = svg('svg', { viewBox: '0 0 ' + W + ' ' + H, class: 'chart', role: 'img', 'aria-label': label }, [svg('title', { text: label })]);
    [1, 4, 7, 10].forEach(function (m) {
      chart.appendChild(svg('line', { x1: L, x2: W - R, y1: y(m), y2: y(m), class: 'grid-line' }));
      chart.appendChild(svg('text', { x: L - 6, y: y(m) + 4, 'text-anchor': 'end', text: String(m) }));
    });
    chart.appendChild(svg('line', { x1: L, x2: W - R, y1: H - B, y2: H - B, class: 'axis' }));
    chart.appendChild(svg('text', { x: L, y: H - 8, text: new Date(start).toLocaleDateString() }));
    chart.appendChild(svg('text', { x: W - R, y: H - 8, 'text-anchor': 'end', text: new Date(end).toLocaleDateString() }));
    chart.appendChild(svg('polyline', { class: 'line', points: points.map(function (p) { return x(p.t).toFixed(1) + ',' + y(p.mood).toFixed(1); }).join(' ') }));
    points.forEach(function (p) {
      var tip = new Date(p.t).toLocaleString() + ': mood ' + p.mood + (p.tags.length ? ' · ' + p.tags.join(', ') : '');
      chart.appendChild(svg('circle', { cx: x(p.t).toFixed(1), cy: y(p.mood).toFixed(1), r: 4, class: 'dot' }, [svg('title', { text: tip })]));
    });
    target.appendChild(chart);
    target.appendChild(el('p', { class: 'muted', text: label }));
  }

  // ------------------------------------------------------------ agent runs

  function tokens(usage) {
    if (!usage) return '—';
    var n = (usage.input_tokens || 0) + (usage.output_tokens || 0);
    return n.toLocaleString();
  }

  function outcomeBadge(outcome) {
    var cls = outcome === 'final_answer' ? 'status-success' : outcome ? 'status-error' : 'status-partial';
    return badge(outcome ? outcome.replace(/_/g, ' ') : 'unfinished', cls);
  }

  function clipped(text, n) { return text.length > n ? text.slice(0, n - 1) + '…' : text; }

  function loadRuns() {
    var body = clear($('runs'));
    api('/v1/agent/runs').then(function (page) {
      $('runs-empty').hidden = page.runs.length > 0;
      $('runs-count').textContent = page.total > page.runs.length ? 'the newest ' + page.runs.length + ' of ' + page.total : '';
      page.runs.forEach(function (r) {
        var open = el('button', { type: 'button', class: 'link', 'data-run': r.id, text: clipped(r.prompt || '(no prompt)', 120),
          title: r.prompt, onclick: function () { showRun(r.id); } });
        body.appendChild(el('tr', null, [
          el('td', null, [timeEl(Date.parse(r.started))]),
          el('td', null, [open, el('span', { class: 'muted', text: ' ' + r.model })]),
          el('td', null, [outcomeBadge(r.outcome)]),
          el('td', { text: String(r.steps) }),
          el('td', { title: r.usage ? r.usage.input_tokens + ' in, ' + r.usage.output_tokens + ' out, ' + r.usage.cached_tokens + ' cached' : null, text: tokens(r.usage) })
        ]));
      });
    }).catch(function (e) { showError($('run-detail'), e); });
  }
  $('runs-refresh').addEventListener('click', loadRuns);

  function showRun(id) {
    var root = clear($('run-detail'));
    root.appendChild(el('p', { class: 'muted', text: 'Loading…' }));
    api('/v1/agent/runs/' + encodeURIComponent(id)).then(function (body) {
      clear(root);
      var run = body.run;
      root.appendChild(el('h3', null, ['Run ', el('span', { class: 'mono', text: run.id }), ' ', outcomeBadge(run.outcome)]));
      root.appendChild(el('p', { class: 'muted' }, [timeEl(Date.parse(run.started)), ' · ' + run.model + ' · ' + run.steps + ' steps · ' + tokens(run.usage) + ' tokens']));
      // Each result is shown folded under the call it answers.
      var results = {};
      var called = {};
      body.entries.forEach(function (e) {
        if (e.type === 'result') results[e.call_id] = e;
        if (e.type === 'assistant') e.calls.forEach(function (c) { called[c.id] = true; });
      });
      var list = el('ol', { class: 'entries' });
      body.entries.forEach(function (e) {
        var item = entry(e, results, called);
        if (item) list.appendChild(item);
      });
      root.appendChild(list);
      root.focus();
    }).catch(function (e) { showError(root, e); });
  }

  function entry(e, results, called) {
    var when = timeEl(Date.parse(e.time));
    switch (e.type) {
      case 'run': return null;
      case 'user':
        return el('li', { class: 'entry user' }, [el('p', { class: 'who' }, ['User ', when]), el('div', { class: 'description', text: e.text })]);
      case 'assistant':
        return el('li', { class: 'entry assistant' }, [
          el('p', { class: 'who' }, ['Assistant ', when]),
          e.text ? el('div', { class: 'description', text: e.text }) : null
        ].concat(e.calls.map(function (c) { return callItem(c, results[c.id]); })));
      case 'result':
        // Shown with its call; one without a call of its own stands alone.
        if (called[e.call_id]) return null;
        return el('li', { class: 'entry' }, [callItem({ summary: e.tool, arguments: '' }, e)]);
      case 'notice':
        return el('li', { class: 'entry notice' }, [el('p', null, [badge('notice'), e.message, ' ', when])]);
      case 'compaction':
        return el('li', { class: 'entry notice' }, [el('p', null, [badge('compacted'),
          e.kind.replace(/_/g, ' ') + ': ' + e.tokens_before.toLocaleString() + ' → ' + e.tokens_after.toLocaleString() + ' tokens ', when])]);
      case 'end':
        return el('li', { class: 'entry end' }, [el('p', null, [outcomeBadge(e.outcome),
          e.steps + ' steps, ' + e.tool_calls + ' tool calls, ' + tokens(e.usage) + ' tokens ', when]),
          e.outcome !== 'final_answer' && e.message ? el('p', { class: 'error', text: e.message }) : null]);
      default: return null;
    }
  }

  function callItem(call, result) {
    var status = result ? result.status : null;
    var summary = el('summary', null, [
      el('span', { class: 'mono', text: call.summary || call.tool }),
      result ? ' → ' : '',
      result ? badge(result.summary || status, 'status-' + status) : badge('no result', 'status-partial')
    ]);
    return el('details', { class: 'call' }, [summary,
      el('p', { class: 'muted', text: 'Arguments' }), el('pre', { text: call.arguments }),
      result ? el('p', { class: 'muted', text: 'Result' }) : null,
      result ? el('pre', { text: result.text }) : null]);
  }

  // ------------------------------------------------------------ cron jobs

  // The next run: relative, with the exact time in the job's own zone on hover.
  function zonedTime(text, tz) {
    if (!text) return el('span', { class: 'muted', text: '—' });
    var ms = Date.parse(text);
    var t = timeEl(ms);
    t.setAttribute('title', text.replace('T', ' ') + ' (' + tz + ')');
    return t;
  }

  function loadCron() {
    var body = clear($('cron'));
    api('/v1/cron/jobs').then(function (page) {
      $('cron-empty').hidden = page.jobs.length > 0;
      page.jobs.forEach(function (j) {
        var last = j.last_run;
        var lastCell = last ? [zonedTime(last.scheduled_for, j.tz), ' ', badge(last.status, last.status === 'sent' || last.status === 'answered' ? 'status-success'
          : last.status === 'failed' ? 'status-error' : 'status-partial'),
          last.outcome && last.outcome !== 'running' ? outcomeBadge(last.outcome) : null,
          last.error ? el('div', { class: 'error', text: last.error }) : null,
          last.result ? el('details', null, [el('summary', { text: clipped(last.result.split('\n')[0], 80) }), el('div', { class: 'description', text: last.result })]) : null]
          : [el('span', { class: 'muted', text: 'not yet' })];
        body.appendChild(el('tr', null, [
          el('td', null, [el('strong', { text: j.name }), el('div', { class: 'muted mono', text: j.workspace })]),
          el('td', { class: 'description', text: j.prompt ? 'Prompt: ' + j.prompt : j.message }),
          el('td', { class: 'mono', text: j.schedule }),
          el('td', { text: j.tz }),
          el('td', null, [zonedTime(j.next_run, j.tz)]),
          el('td', null, lastCell),
          el('td', { text: j.channel ? j.channel + (j.chat_id ? ' ' + j.chat_id : '') : '— (answer kept)' })
        ]));
      });
    }).catch(function (e) { showError($('cron-empty'), e); $('cron-empty').hidden = false; });
  }
  $('cron-refresh').addEventListener('click', loadCron);

  // ------------------------------------------------------------ checkpoints

  // A checkpoint per tool call that changed files. Restoring one is shown as a dry run first (what each file
  // becomes, which were changed by hand since), and done only when confirmed.
  var checkpointsBefore = null;

  function checkpointStatus(c) {
    return badge(c.status, c.status === 'complete' ? 'status-success' : c.status === 'pruned' ? 'status-error' : 'status-partial');
  }

  function loadCheckpoints(more) {
    var body = $('checkpoints');
    if (!more) { clear(body); checkpointsBefore = null; }
    var q = new URLSearchParams({ limit: '50' });
    if (more && checkpointsBefore) q.set('before', String(checkpointsBefore));
    return api('/v1/checkpoints?' + q.toString()).then(function (page) {
      $('checkpoints-workspace').textContent = page.workspace;
      page.checkpoints.forEach(function (c) {
        body.appendChild(el('tr', null, [
          el('td', null, [el('button', { type: 'button', class: 'link mono', 'data-checkpoint': c.id, text: c.id,
            onclick: function () { showCheckpoint(c.id); } })]),
          el('td', null, [timeEl(c.at_ms)]),
          el('td', { class: 'mono', text: c.tool + (c.rewind_of ? ' (to before ' + c.rewind_of + ')' : '') }),
          el('td', { text: c.origin_text }),
          el('td', { text: String(c.file_count) }),
          el('td', null, [checkpointStatus(c), c.problem ? el('div', { class: 'muted', text: c.problem }) : null])
        ]));
      });
      checkpointsBefore = page.next_before;
      $('checkpoints-more').hidden = !page.next_before;
      $('checkpoints-empty').hidden = body.children.length > 0;
    }).catch(function (e) { showError($('checkpoint-detail'), e); });
  }
  $('checkpoints-refresh').addEventListener('click', function () { loadCheckpoints(false); });
  $('checkpoints-more').addEventListener('click', function () { loadCheckpoints(true); });

  // A unified diff, its lines coloured by what they do.
  function diffBlock(text) {
    var pre = el('pre', { class: 'diff' });
    text.split('\n').forEach(function (line, i, all) {
      if (i === all.length - 1 && line === '') return;
      var cls = /^(\+\+\+|---)/.test(line) ? 'hunk' : line[0] === '+' ? 'add' : line[0] === '-' ? 'del' : line.slice(0, 2) === '@@' ? 'hunk' : null;
      pre.appendChild(el('span', cls ? { class: cls } : null, [line + '\n']));
    });
    return pre;
  }

  function showCheckpoint(id) {
    var root = clear($('checkpoint-detail'));
    root.appendChild(el('p', { class: 'muted', text: 'Loading…' }));
    api('/v1/checkpoints/' + encodeURIComponent(id) + '/diff').then(function (body) {
      clear(root);
      var c = body.checkpoint;
      root.appendChild(el('h3', null, ['Checkpoint ', el('span', { class: 'mono', text: c.id }), ' ', checkpointStatus(c)]));
      root.appendChild(el('p', { class: 'muted' }, [timeEl(c.at_ms), ' · ', el('span', { class: 'mono', text: c.tool }), ' · from ' + c.origin_text +
        ' · ' + c.file_count + (c.file_count === 1 ? ' file' : ' files')]));
      if (c.problem) root.appendChild(el('p', { class: 'error', text: c.problem }));
      var restore = el('div', { id: 'restore' });
      root.appendChild(el('p', null, [el('button', { type: 'button', id: 'restore-plan', class: 'primary',
        text: 'Restore to before ' + c.id + '…', disabled: c.status === 'pruned',
        onclick: function () { planRestore(c.id, restore, false); } })]));
      root.appendChild(restore);
      body.files.forEach(function (f) {
        var what = f.path + (f.renamed_from ? ' (renamed from ' + f.renamed_from + ')' : '');
        var summary = el('summary', null, [el('span', { class: 'mono', text: what }), ' ', badge(f.change)]);
        var inside = f.diff ? diffBlock(f.diff)
          : el('p', { class: 'muted', text: !f.captured ? 'Its content before was not kept' + (f.note ? ' (' + f.note + ').' : '.')
            : 'No text diff (empty, binary, or not a regular file).' });
        root.appendChild(el('details', { class: 'call', open: body.files.length <= 5 }, [summary, inside]));
      });
      root.focus();
    }).catch(function (e) { showError(root, e); });
  }

  function restoreRequest(id, options) {
    return api('/v1/checkpoints/' + encodeURIComponent(id) + '/restore', {
      method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(options) });
  }

  function planList(plan, skipping) {
    var list = el('ul', { class: 'plan' });
    plan.items.forEach(function (item) {
      var left = item.skipped || (item.conflict && skipping);
      var text = item.action === 'none' ? 'already as it was: ' + item.path
        : left ? 'left alone: ' + item.path + (item.skipped ? ' (' + item.skipped + ')' : ' (changed by hand since)')
        : item.action + ': ' + item.path + (item.conflict ? ' (changed by hand since!)' : '');
      list.appendChild(el('li', { class: item.conflict ? 'conflict' : left || item.action === 'none' ? 'skip' : null, text: text }));
    });
    return list;
  }

  // The dry run, then a confirmation that restores for real with the same options.
  function planRestore(id, target, skipConflicts) {
    clear(target).appendChild(el('p', { class: 'muted', text: 'Working out what would change…' }));
    var options = { dry_run: true, skip_conflicts: skipConflicts };
    restoreRequest(id, options).then(function (outcome) {
      clear(target);
      var plan = outcome.plan;
      var n = outcome.restored;
      target.appendChild(el('p', { role: 'status', text: n === 0 ? 'Nothing would be restored to before ' + plan.to + ':'
        : 'Restoring undoes ' + plan.undoes.join(', ') + ' and changes ' + n + (n === 1 ? ' file' : ' files') + ':' }));
      target.appendChild(planList(plan, skipConflicts));
      if (n === 0) return;
      target.appendChild(el('p', { class: 'row' }, [
        el('button', { type: 'button', id: 'restore-confirm', class: 'primary', text: 'Restore ' + n + (n === 1 ? ' file' : ' files'),
          onclick: function () { doRestore(id, target, skipConflicts); } }),
        el('button', { type: 'button', text: 'Cancel', onclick: function () { clear(target); } })
      ]));
    }).catch(function (e) {
      if (e.status !== 409 || !e.body) { showError(target, e); return; }
      clear(target);
      target.appendChild(el('p', { class: 'error', role: 'alert', text: e.message }));
      if (e.body.plan) target.appendChild(planList(e.body.plan, false));
      target.appendChild(el('p', { class: 'row' }, [
        el('button', { type: 'button', id: 'restore-skip-conflicts', text: 'Leave those files alone and restore the others…',
          onclick: function () { planRestore(id, target, true); } }),
        el('button', { type: 'button', text: 'Cancel', onclick: function () { clear(target); } })
      ]));
    });
  }

  function doRestore(id, target, skipConflicts) {
    clear(target).appendChild(el('p', { class: 'muted', text: 'Restoring…' }));
    restoreRequest(id, { dry_run: false, skip_conflicts: skipConflicts }).then(function (outcome) {
      clear(target);
      var n = outcome.restored;
      target.appendChild(el('p', { role: 'status', id: 'restore-done', text: 'Restored ' + n + (n === 1 ? ' file' : ' files') + ' to before ' + outcome.plan.to + '.' +
        (outcome.checkpoint ? ' This restore is checkpoint ' + outcome.checkpoint + ': restore that one to undo it.' : '') }));
      if (outcome.skipped.length) {
        target.appendChild(el('ul', { class: 'plan' }, outcome.skipped.map(function (s) {
          return el('li', { class: 'skip', text: 'left alone: ' + s[0] + ' (' + s[1] + ')' });
        })));
      }
      loadCheckpoints(false);
    }).catch(function (e) { showError(target, e); });
  }

  // ------------------------------------------------------------ questions

  // The questions of agent runs waiting for an answer, above every tab. Polled; a set already shown keeps what
  // the person picked or wrote until it is answered, declined, or no longer waiting.
  var QUESTIONS_POLL_MS = 2000;
  var questionSets = {};
  // Sent: never shown again, even by a poll that was under way meanwhile.
  var questionsDone = {};

  function pollQuestions() {
    var next = function () { setTimeout(pollQuestions, QUESTIONS_POLL_MS); };
    if (document.hidden) { next(); return; }
    api('/v1/questions').then(function (body) { renderQuestions(body.questions); })
      .catch(function () { /* the next poll tries again */ })
      .then(next);
  }

  function renderQuestions(pending) {
    var list = $('question-list');
    var waiting = {};
    pending.forEach(function (p) {
      if (questionsDone[p.id]) return;
      waiting[p.id] = true;
      if (!questionSets[p.id]) {
        questionSets[p.id] = questionSet(p);
        list.appendChild(questionSets[p.id]);
      }
    });
    Object.keys(questionSets).forEach(function (id) { if (!waiting[id]) dropQuestionSet(id); });
    showQuestionCount();
  }

  function dropQuestionSet(id) {
    var node = questionSets[id];
    if (!node) return;
    delete questionSets[id];
    var focused = node.contains(document.activeElement);
    node.parentNode.removeChild(node);
    // The focus goes to the next set, if any, rather than to the page's start.
    if (focused) {
      var next = $('question-list').querySelector('.question-set');
      if (next) next.focus();
    }
  }

  function showQuestionCount() {
    var n = Object.keys(questionSets).length;
    $('questions').hidden = n === 0;
    var text = n === 0 ? '' : n === 1 ? 'An agent run is waiting for your answer.' : n + ' agent runs are waiting for your answers.';
    if ($('questions-status').textContent !== text) $('questions-status').textContent = text;
    document.title = n ? '(' + n + ') toolbelt' : 'toolbelt';
  }

  // One call's questions: per question its options (radio buttons, check boxes where several may be picked) and a
  // field for an answer in one's own words; Answer, and Decline with an optional reason.
  function questionSet(p) {
    var base = 'q-' + p.id.replace(/[^A-Za-z0-9_-]/g, '');
    var fields = p.questions.map(function (q, i) {
      var name = base + '-' + i;
      var inputs = [];
      var choices = q.options.map(function (o, j) {
        var input = el('input', { type: q.multi_select ? 'checkbox' : 'radio', id: name + '-' + j, name: name, value: o.label });
        inputs.push(input);
        return el('div', { class: 'choice' }, [input, el('label', { for: input.id }, [
          o.label, o.description ? el('span', { class: 'muted', text: ' — ' + o.description }) : null])]);
      });
      var own = el('input', { type: 'text', id: name + '-text', autocomplete: 'off' });
      var node = el('fieldset', { class: 'question' }, [
        el('legend', null, [badge(q.header), ' ', q.question]),
        q.multi_select ? el('p', { class: 'help muted', text: 'Pick any that apply.' }) : null
      ].concat(choices).concat([el('label', { for: own.id, class: 'own', text: 'Or in your own words' }), own]));
      return { question: q, inputs: inputs, own: own, el: node };
    });
    var error = el('p', { class: 'error', role: 'alert' });
    error.hidden = true;
    var reason = el('input', { type: 'text', id: base + '-reason', autocomplete: 'off' });
    var answerButton = el('button', { type: 'submit', class: 'primary', text: 'Answer' });
    var declineButton = el('button', { type: 'button', class: 'decline', text: 'Decline' });
    var asked = el('p', { class: 'muted asked' }, ['Asked ', timeEl(p.asked_at),
      p.run_id ? ' by run ' : null,
      p.run_id ? el('button', { type: 'button', class: 'link mono', 'data-run': p.run_id, text: p.run_id,
        onclick: function () { selectTab('runs', false); showRun(p.run_id); } }) : null,
      '; it goes on without an answer ', timeEl(p.expires_at), '.']);
    var form = el('form', { class: 'card question-set', 'data-questions': p.id, tabindex: '-1', novalidate: true,
      'aria-label': p.questions.length === 1 ? 'A question' : p.questions.length + ' questions' },
    [asked].concat(fields.map(function (f) { return f.el; })).concat([
      error,
      el('p', { class: 'row' }, [answerButton, declineButton,
        el('label', { for: reason.id }, ['Reason for declining (optional)', reason])])
    ]));

    function fail(message) {
      error.textContent = message;
      error.hidden = false;
    }

    function send(body) {
      answerButton.disabled = declineButton.disabled = true;
      error.hidden = true;
      api('/v1/questions/' + encodeURIComponent(p.id), {
        method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body)
      }).then(function () {
        questionsDone[p.id] = true;
        dropQuestionSet(p.id);
        showQuestionCount();
        $('questions-status').textContent = body.decline ? 'Declined.' : 'Answered.';
      }).catch(function (e) {
        answerButton.disabled = declineButton.disabled = false;
        fail(String(e.message || e));
      });
    }

    form.addEventListener('submit', function (e) {
      e.preventDefault();
      var answers = [];
      for (var i = 0; i < fields.length; i++) {
        var f = fields[i];
        var picked = f.inputs.filter(function (input) { return input.checked; }).map(function (input) { return input.value; });
        var text = f.own.value.trim();
        if (!f.question.multi_select && !picked.length && !text) {
          fail('Pick an answer to “' + f.question.header + '”, or write one.');
          (f.inputs[0] || f.own).focus();
          return;
        }
        answers.push(text ? { header: f.question.header, selected: picked, text: text } : { header: f.question.header, selected: picked });
      }
      send({ answers: answers });
    });
    declineButton.addEventListener('click', function () {
      var why = reason.value.trim();
      send(why ? { decline: true, reason: why } : { decline: true });
    });
    return form;
  }

  // ------------------------------------------------------------ start

  var first = /^#(tools|calls|todos|planner|runs|cron|checkpoints)$/.exec(window.location.hash);
  selectTab(first ? first[1] : 'tools', false);
  if (!loaded.tools) { loaded.tools = true; loadTools(); }
  pollQuestions();
})();
