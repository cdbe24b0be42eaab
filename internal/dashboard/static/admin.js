// The sign-in page of pinbot's operator dashboard. It keeps the admin
// token in this tab's sessionStorage, fetches /admin with it as a Bearer
// header, and puts the dashboard that the server rendered into the page,
// again every 15 seconds. No inline script: the page's CSP allows only
// this file.
"use strict";
(() => {
  const KEY = "pinbot.admin.token";
  const REFRESH_MS = 15000;
  const byId = (id) => document.getElementById(id);
  let timer = 0;

  function show(el, on) {
    el.hidden = !on;
  }

  function status(text) {
    const el = byId("status");
    el.textContent = text || "";
    show(el, Boolean(text));
  }

  // signedOut forgets the token and shows the form, with why if given.
  function signedOut(why) {
    sessionStorage.removeItem(KEY);
    clearTimeout(timer);
    status("");
    show(byId("login"), true);
    show(byId("signout"), false);
    const err = byId("login-error");
    err.textContent = why || "";
    show(err, Boolean(why));
    byId("dashboard").replaceChildren();
    byId("token").focus();
  }

  function again(text) {
    status(text + " Trying again in 15 s.");
    timer = setTimeout(refresh, REFRESH_MS);
  }

  async function refresh() {
    clearTimeout(timer);
    const token = sessionStorage.getItem(KEY);
    if (!token) {
      signedOut("");
      return;
    }
    let res;
    try {
      res = await fetch("/admin", {
        headers: { Authorization: "Bearer " + token },
        cache: "no-store",
        credentials: "omit",
      });
    } catch (e) {
      again("pinbot did not answer.");
      return;
    }
    if (res.status === 401) {
      signedOut("That token was not accepted.");
      return;
    }
    if (!res.ok) {
      again("pinbot answered " + res.status + ".");
      return;
    }
    // The server escaped every value; the parsed document runs no script.
    const doc = new DOMParser().parseFromString(await res.text(), "text/html");
    const fresh = doc.getElementById("dashboard");
    if (!fresh) {
      again("The answer held no dashboard.");
      return;
    }
    byId("dashboard").replaceWith(document.adoptNode(fresh));
    show(byId("login"), false);
    show(byId("signout"), true);
    status("");
    timer = setTimeout(refresh, REFRESH_MS);
  }

  byId("login-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    const input = byId("token");
    const token = input.value.trim();
    input.value = "";
    if (token) {
      sessionStorage.setItem(KEY, token);
      refresh();
    }
  });
  byId("signout").addEventListener("click", () => signedOut(""));
  refresh();
})();
