'use strict';
// A one-time login link (`toolbelt serve --open`) carries its code in the fragment,
// which never reaches the server's logs: post it, after taking it off the address.
(function () {
  var match = /^#once=([0-9a-fA-F]+)$/.exec(window.location.hash);
  if (!match) return;
  history.replaceState(null, '', window.location.pathname);
  document.getElementById('once').value = match[1];
  document.getElementById('once-form').submit();
})();
