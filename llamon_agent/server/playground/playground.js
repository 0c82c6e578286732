// The llamon Playground (docs/playground.md): talk to the server's agents by hand.
//
// Everything the server sends is data from users (agent text, questions, tool arguments), so
// every node is built with document.createElement and filled with textContent: no markup is ever
// parsed from data. Keys and tokens live in this script's memory only, never in storage.
"use strict";

(() => {
  const TERMINAL = new Set(["completed", "canceled", "failed", "rejected"]);
  const REVIEW_SCHEMA = "llamon.hitl.review.v1";
  const DEFAULT_DECISIONS = ["approve", "edit", "reject"];
  const DECISION_LABELS = new Map([
    ["approve", "Approve"], ["edit", "Edit"], ["reject", "Reject"], ["respond", "Respond"],
  ]);
  const MAX_RESUBSCRIBES = 3;

  const memory = {
    apiKey: null,
    reviewerToken: null,
    keyWait: null,
    taskId: null,
    contextId: null,
    lastState: null,
    countdowns: [],
    streaming: null, // the AbortController of the stream being read
    rpcCount: 0,
    groupCount: 0,
  };

  /** An error already put in words for a person. */
  class ShownError extends Error {}

  const $ = (id) => document.getElementById(id);

  function el(tag, attributes, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attributes || {})) {
      if (key === "text") node.textContent = value;
      else if (key === "className") node.className = value;
      else node.setAttribute(key, value);
    }
    for (const child of children) {
      if (child !== null && child !== undefined) node.append(child); // a string becomes a Text node
    }
    return node;
  }

  function newId() {
    const bytes = crypto.getRandomValues(new Uint8Array(16)); // randomUUID needs a secure origin
    bytes[6] = (bytes[6] & 0x0f) | 0x40;
    bytes[8] = (bytes[8] & 0x3f) | 0x80;
    const hex = Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
    return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
  }

  const json = (value) => JSON.stringify(value, null, 2);
  const textPart = (text) => ({ kind: "text", text });
  const dataPart = (data) => ({ kind: "data", data });
  const valueText = (value) => (typeof value === "string" ? value : JSON.stringify(value));

  // ------------------------------------------------------------------ errors

  function showError(words) {
    $("errors").hidden = false;
    $("error-list").append(el("li", { text: words }));
  }

  function describeRpcError(error) {
    if (!error || typeof error !== "object") return "The server answered with an error it did not describe.";
    let words = `JSON-RPC error ${error.code}: ${error.message}`;
    if (error.data !== undefined) words += ` (${JSON.stringify(error.data)})`;
    return words;
  }

  async function describeHttp(response) {
    let detail;
    try {
      const body = await response.text();
      try {
        const parsed = JSON.parse(body);
        detail = parsed && typeof parsed.detail === "string" ? parsed.detail : body;
      } catch (notJson) {
        detail = body;
      }
    } catch (err) {
      detail = `(its body could not be read: ${err.message})`;
    }
    const status = `HTTP ${response.status}${response.statusText ? ` ${response.statusText}` : ""}`;
    return detail ? `${status}: ${detail.slice(0, 500)}` : status;
  }

  async function request(url, init) {
    try {
      return await fetch(url, init);
    } catch (err) {
      throw new ShownError(`Network error: the server could not be reached (${err.message}).`);
    }
  }

  async function readJson(response) {
    try {
      return await response.json();
    } catch (err) {
      throw new ShownError(`The server's answer is not JSON: ${err.message}`);
    }
  }

  function report(err) {
    showError(err instanceof ShownError ? err.message : `Unexpected error in the page: ${err}`);
  }

  // ------------------------------------------------------------------ API key

  function askForKey(reason) {
    $("api-key-reason").textContent = reason;
    $("api-key-box").hidden = false;
    $("api-key").focus();
    if (memory.keyWait === null) {
      let settle;
      const promise = new Promise((resolve, reject) => { settle = { resolve, reject }; });
      memory.keyWait = { promise, ...settle };
    }
    return memory.keyWait.promise;
  }

  function keyGiven(cancelled) {
    const wait = memory.keyWait;
    if (!cancelled) {
      const key = $("api-key").value.trim();
      if (!key) {
        showError("Enter an API key first.");
        return;
      }
      memory.apiKey = key;
    }
    $("api-key").value = "";
    $("api-key-box").hidden = true;
    memory.keyWait = null;
    if (wait === null) return;
    if (cancelled) wait.reject(new ShownError("No API key was given, so the request was not sent."));
    else wait.resolve();
  }

  /** fetch with the API key; on 401 the page asks for a key and sends the request again. */
  async function withApiKey(url, init) {
    for (;;) {
      const headers = { ...init.headers };
      if (memory.apiKey !== null) headers.Authorization = `Bearer ${memory.apiKey}`;
      const response = await request(url, { ...init, headers });
      if (response.status !== 401) return response;
      const said = await describeHttp(response);
      if (memory.apiKey !== null) {
        showError(`${said}. The server refused the API key; enter the right one.`);
        memory.apiKey = null;
        await askForKey(`${said}: the server refused that key. Enter the right one.`);
      } else {
        await askForKey(`${said}: this server needs an API key (sent as Authorization: Bearer).`);
      }
    }
  }

  // ------------------------------------------------------------------ JSON-RPC streams

  function rpcBody(method, params) {
    memory.rpcCount += 1;
    return JSON.stringify({ jsonrpc: "2.0", id: `playground-${memory.rpcCount}`, method, params });
  }

  async function readEvents(response, onMessage) {
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    const flush = (block) => {
      const data = block.split("\n").filter((line) => line.startsWith("data:"))
        .map((line) => line.slice(5).replace(/^ /, "")).join("\n");
      if (!data) return; // a keep-alive comment, or an id alone
      let parsed;
      try {
        parsed = JSON.parse(data);
      } catch (err) {
        showError(`An event of the stream is not JSON: ${err.message}`);
        return;
      }
      onMessage(parsed);
    };
    for (;;) {
      let chunk;
      try {
        chunk = await reader.read();
      } catch (err) {
        throw new ShownError(`The stream broke off: ${err.message}`);
      }
      if (chunk.done) break;
      buffer += decoder.decode(chunk.value, { stream: true }).replace(/\r/g, "");
      for (let cut = buffer.indexOf("\n\n"); cut >= 0; cut = buffer.indexOf("\n\n")) {
        flush(buffer.slice(0, cut));
        buffer = buffer.slice(cut + 2);
      }
    }
    buffer += decoder.decode();
    if (buffer.trim()) flush(buffer);
  }

  /** POST a streaming method; each JSON-RPC result goes to onResult, each error to onError. */
  async function stream(method, params, onResult, onError, signal) {
    const response = await withApiKey("/", {
      method: "POST",
      signal,
      headers: { "Content-Type": "application/json", Accept: "text/event-stream" },
      body: rpcBody(method, params),
    });
    if (!response.ok) throw new ShownError(await describeHttp(response));
    const type = response.headers.get("content-type") || "";
    if (!type.startsWith("text/event-stream")) { // refused before the stream started: plain JSON
      const body = await readJson(response);
      if (body && body.error) onError(body.error);
      else throw new ShownError(`The server answered ${type || "without a content type"}, not an event stream.`);
      return;
    }
    await readEvents(response, (message) => {
      if (message && message.error) onError(message.error);
      else if (message && message.result) onResult(message.result);
      else showError(`An event with neither result nor error: ${JSON.stringify(message).slice(0, 300)}`);
    });
  }

  /**
   * Send (or follow) and show what comes back. onRefused gets the server's own words when it
   * refuses; onAccepted runs at the first event (the server took the message).
   */
  async function run(method, params, onRefused, onAccepted) {
    if (memory.streaming !== null) {
      showError("A reply is still streaming: wait for it to end (or start a new context) before sending another message.");
      return;
    }
    const following = new AbortController();
    memory.streaming = following;
    $("send").disabled = true;
    let accepted = false;
    let ended = false;
    const onResult = (result) => {
      if (following.signal.aborted) return;
      if (!accepted) {
        accepted = true;
        clearPending();
        if (onAccepted) onAccepted();
      }
      if (result.final === true || result.kind === "message") ended = true;
      showResult(result);
    };
    const onError = (error) => {
      if (following.signal.aborted) return;
      ended = true;
      if (onRefused) onRefused(`The server refused this: ${error.message}`);
      showError(describeRpcError(error));
    };
    try {
      await stream(method, params, onResult, onError, following.signal);
      for (let attempt = 0; accepted && !ended && attempt < MAX_RESUBSCRIBES; attempt += 1) {
        logEntry("Page", el("p", { text: "The stream closed before the task ended: following it again (tasks/resubscribe)." }), "");
        await stream("tasks/resubscribe", { id: memory.taskId }, onResult, onError, following.signal);
      }
      if (accepted && !ended) showError("The stream kept closing before the task ended; use tasks/get to see how it stands.");
    } catch (err) {
      if (!following.signal.aborted) report(err); // stopped on purpose: the task goes on on the server
    } finally {
      memory.streaming = null;
      $("send").disabled = false;
    }
  }

  // ------------------------------------------------------------------ what the server says

  function setTask(taskId, contextId) {
    if (typeof taskId === "string" && taskId !== memory.taskId) {
      memory.taskId = taskId;
      memory.lastState = null;
      $("timeline").append(el("li", { className: "task-start", text: `task ${taskId.slice(0, 8)}` }));
    }
    if (typeof contextId === "string") {
      memory.contextId = contextId;
      $("context-id").value = contextId;
    }
    $("task-ids").textContent = `Task ${memory.taskId} in context ${memory.contextId}`;
  }

  function addState(status) {
    const name = status && typeof status.state === "string" ? status.state : "unknown";
    if (name === memory.lastState) return;
    memory.lastState = name;
    const item = el("li", { className: `state state-${name}`, "data-state": name }, name);
    if (status && typeof status.timestamp === "string") {
      const at = new Date(status.timestamp);
      item.append(el("time", { datetime: status.timestamp, text: Number.isNaN(at.getTime()) ? status.timestamp : at.toLocaleTimeString() }));
    }
    $("timeline").append(item);
  }

  function partsNode(parts) {
    const box = el("div", { className: "parts" });
    for (const part of Array.isArray(parts) ? parts : []) {
      if (part && part.kind === "text") box.append(el("p", { text: String(part.text) }));
      else if (part && part.kind === "data") box.append(el("pre", { text: json(part.data) }));
      else box.append(el("pre", { text: json(part) }));
    }
    return box;
  }

  function logEntry(who, node, className) {
    const item = el("li", { className }, el("span", { className: "who", text: who }), node);
    $("log").append(item);
    item.scrollIntoView({ block: "nearest" });
  }

  function hitlOf(message) {
    for (const part of Array.isArray(message.parts) ? message.parts : []) {
      if (part && part.kind === "data" && part.data && typeof part.data.hitl === "object" && part.data.hitl !== null) return part.data.hitl;
    }
    return null;
  }

  function textOf(message) {
    return (Array.isArray(message.parts) ? message.parts : [])
      .filter((part) => part && part.kind === "text").map((part) => String(part.text)).join("\n");
  }

  function showResult(result) {
    if (result.kind === "task") {
      setTask(result.id, result.contextId);
      addState(result.status);
    } else if (result.kind === "status-update") {
      setTask(result.taskId, result.contextId);
      showStatus(result.status || {}, result.final === true, result.taskId, result.contextId);
    } else if (result.kind === "artifact-update") {
      const artifact = result.artifact || {};
      logEntry(`Result: ${artifact.name || artifact.artifactId || "artifact"}`, partsNode(artifact.parts), "result");
    } else if (result.kind === "message") {
      logEntry(result.role === "user" ? "You" : "Agent", partsNode(result.parts), "");
    } else {
      showError(`An event of an unknown kind: ${JSON.stringify(result.kind)}`);
    }
  }

  function showStatus(status, final, taskId, contextId) {
    addState(status);
    const message = status.message;
    if (status.state === "input-required" && message) {
      const hitl = hitlOf(message);
      const asks = hitl && typeof hitl.question === "string" ? hitl.question : textOf(message);
      logEntry("Agent asks", el("p", { text: asks }), "");
      showPending(message, taskId, contextId);
      return;
    }
    if (final) clearPending();
    if (!message) return;
    const bad = status.state === "failed" || status.state === "rejected" || status.state === "canceled";
    logEntry(`Agent (${status.state})`, partsNode(message.parts), bad ? "ended-badly" : (TERMINAL.has(status.state) ? "result" : ""));
  }

  // ------------------------------------------------------------------ questions and reviews

  function clearPending() {
    for (const id of memory.countdowns) clearInterval(id);
    memory.countdowns = [];
    $("pending").replaceChildren();
  }

  function formatSeconds(total) {
    const hours = Math.floor(total / 3600);
    const minutes = Math.floor((total % 3600) / 60);
    const seconds = String(total % 60).padStart(2, "0");
    return hours ? `${hours} h ${String(minutes).padStart(2, "0")}:${seconds}` : `${minutes}:${seconds}`;
  }

  function countdown(deadline) {
    const node = el("p", { className: "countdown", role: "timer" });
    const at = Date.parse(deadline);
    if (Number.isNaN(at)) {
      node.textContent = `Deadline: ${deadline}`;
      return node;
    }
    const tick = () => {
      const left = Math.round((at - Date.now()) / 1000);
      if (left <= 0) {
        node.textContent = `The deadline passed (${deadline}): the server does what the deadline says.`;
        node.classList.add("passed");
      } else {
        node.textContent = `Answer within ${formatSeconds(left)} (deadline ${deadline})`;
      }
    };
    tick();
    memory.countdowns.push(setInterval(tick, 1000));
    return node;
  }

  function showPending(message, taskId, contextId) {
    clearPending();
    const metadata = message.metadata && typeof message.metadata === "object" ? message.metadata : {};
    const target = {
      taskId,
      contextId,
      interruptId: typeof metadata.interruptId === "string" ? metadata.interruptId : null,
      reask: metadata.reask === true,
    };
    const hitl = hitlOf(message);
    const form = hitl && hitl.schema === REVIEW_SCHEMA ? reviewForm(hitl, message, target) : questionForm(hitl, message, target);
    $("pending").append(form);
  }

  /** Answer the pending question or review: bound to its task and interruptId. */
  function answer(target, parts, onRefused) {
    const message = { kind: "message", role: "user", messageId: newId(), parts };
    if (target.taskId) message.taskId = target.taskId;
    if (target.contextId) message.contextId = target.contextId;
    if (target.interruptId) message.metadata = { interruptId: target.interruptId };
    run("message/stream", { message }, onRefused, () => logEntry("You", partsNode(parts), "from-user"));
  }

  function choicesOf(hitl) {
    if (!hitl) return [];
    for (const key of ["choices", "options"]) {
      const items = hitl[key];
      if (!Array.isArray(items) || items.length === 0) continue;
      return items.map((item) => {
        if (item && typeof item === "object") {
          const value = "value" in item ? item.value : item.label;
          return {
            label: typeof item.label === "string" ? item.label : valueText(value),
            value,
            description: typeof item.description === "string" ? item.description : null,
          };
        }
        return { label: valueText(item), value: item, description: null };
      });
    }
    return [];
  }

  function questionForm(hitl, message, target) {
    const box = el("div", { className: "question", role: "group", "aria-label": "Question" });
    if (target.reask) box.append(el("p", { className: "reask", text: "Asked again: the last answer did not match a choice." }));
    const asks = hitl && typeof hitl.question === "string" ? hitl.question : textOf(message);
    box.append(el("p", { className: "question-text", text: asks }));
    if (hitl && typeof hitl.expires_at === "string") box.append(countdown(hitl.expires_at));
    const refusal = el("p", { className: "field-error", role: "alert" });
    const show = (words) => { refusal.textContent = words; };
    const choices = choicesOf(hitl);
    if (choices.length && !(hitl && hitl.multi_select === true)) {
      const row = el("div", { className: "choices" });
      for (const choice of choices) {
        const button = el("button", { type: "button", className: "choice" }, choice.label);
        if (choice.description) button.append(el("span", { className: "choice-description", text: choice.description }));
        button.addEventListener("click", () => answer(target, [textPart(valueText(choice.value)), dataPart({ value: choice.value })], show));
        row.append(button);
      }
      box.append(row);
    } else if (choices.length) {
      const group = el("fieldset", {}, el("legend", { text: "Pick one or more" }));
      const boxes = choices.map((choice) => {
        const input = el("input", { type: "checkbox" });
        group.append(el("label", {}, input, ` ${choice.label}`));
        return { input, choice };
      });
      const send = el("button", { type: "button", className: "primary" }, "Send the selected");
      send.addEventListener("click", () => {
        const picked = boxes.filter((b) => b.input.checked).map((b) => b.choice.value);
        answer(target, [textPart(picked.map(valueText).join(", ")), dataPart({ value: picked })], show);
      });
      group.append(send);
      box.append(group);
    }
    if (choices.length === 0 || !hitl || hitl.free_text_allowed !== false) {
      const input = el("input", { type: "text", className: "free-text" });
      const send = el("button", { type: "button", className: "primary" }, "Send answer");
      const submit = () => answer(target, [textPart(input.value)], show);
      send.addEventListener("click", submit);
      input.addEventListener("keydown", (event) => { if (event.key === "Enter") submit(); });
      box.append(el("label", {}, choices.length ? "Or answer in your own words" : "Your answer", input), send);
    }
    box.append(refusal);
    return box;
  }

  function allowedFor(configs, action, index) {
    const config = configs[index] && configs[index].action_name === action.name
      ? configs[index] : configs.find((c) => c && c.action_name === action.name) || configs[index];
    const allowed = config && config.allowed_decisions;
    return Array.isArray(allowed) && allowed.length && allowed.every((d) => typeof d === "string")
      ? allowed : DEFAULT_DECISIONS;
  }

  function actionEditor(action, allowed) {
    const name = typeof action.name === "string" ? action.name : valueText(action.name);
    const node = el("div", { className: "action" }, el("p", {}, el("span", { className: "action-name", text: name })));
    if (action.description !== undefined && action.description !== null) {
      node.append(el("p", { className: "action-description", text: String(action.description) }));
    }
    node.append(el("span", { className: "hint", text: "Arguments" }), el("pre", { className: "action-args", text: json(action.args) }));
    const editor = el("textarea", { rows: "7", className: "args-editor" });
    editor.value = json(action.args === undefined ? {} : action.args);
    const editorError = el("p", { className: "field-error editor-error", role: "alert" });
    const rejectMessage = el("input", { type: "text", className: "reject-message" });
    const respondMessage = el("input", { type: "text", className: "respond-message" });
    const panels = new Map([
      ["edit", el("div", {}, el("label", {}, `Arguments of ${name} (JSON)`, editor), editorError)],
      ["reject", el("label", {}, "Why (optional; the agent reads it)", rejectMessage)],
      ["respond", el("label", {}, "Answer for the agent (instead of running the tool)", respondMessage)],
    ]);
    const fields = el("div", { className: "decision-fields" });
    const choiceError = el("p", { className: "field-error", role: "alert" });
    memory.groupCount += 1;
    const group = `decision-${memory.groupCount}`;
    const radios = el("div", { className: "decisions", role: "radiogroup", "aria-label": `Decision for ${name}` });
    let chosen = null;
    for (const decision of allowed) {
      const radio = el("input", { type: "radio", name: group, value: decision });
      radio.addEventListener("change", () => {
        chosen = decision;
        choiceError.textContent = "";
        fields.replaceChildren();
        if (panels.has(decision)) fields.append(panels.get(decision));
      });
      radios.append(el("label", {}, radio, ` ${DECISION_LABELS.get(decision) || decision}`));
    }
    node.append(radios, fields, choiceError);
    const read = () => {
      editorError.textContent = "";
      if (chosen === null) {
        choiceError.textContent = `Choose a decision for ${name}.`;
        return null;
      }
      if (chosen === "edit") {
        let args;
        try {
          args = JSON.parse(editor.value);
        } catch (err) {
          editorError.textContent = `This is not JSON: ${err.message}`;
          return null;
        }
        return { type: "edit", edited_action: { name, args } };
      }
      if (chosen === "reject") return rejectMessage.value.trim() ? { type: "reject", message: rejectMessage.value } : { type: "reject" };
      if (chosen === "respond") return { type: "respond", message: respondMessage.value };
      return { type: chosen };
    };
    const refuse = (words) => {
      if (chosen !== "edit") return false;
      editorError.textContent = words; // the server's validation message, next to the editor
      return true;
    };
    return { node, read, refuse };
  }

  function reviewForm(hitl, message, target) {
    const box = el("div", { className: "review", role: "group", "aria-label": "Tool review" });
    box.append(el("p", { className: "question-text", text: textOf(message) || "Tool calls wait for your review." }));
    if (typeof hitl.expires_at === "string") box.append(countdown(hitl.expires_at));
    const actions = Array.isArray(hitl.action_requests) ? hitl.action_requests : [];
    const configs = Array.isArray(hitl.review_configs) ? hitl.review_configs : [];
    const editors = actions.map((action, index) => {
      const safe = action && typeof action === "object" ? action : { name: valueText(action) };
      return actionEditor(safe, allowedFor(configs, safe, index));
    });
    for (const editor of editors) box.append(editor.node);
    const refusal = el("p", { className: "field-error", role: "alert" });
    const send = el("button", { type: "button", className: "primary" }, "Send decisions");
    send.addEventListener("click", () => {
      refusal.textContent = "";
      const decisions = editors.map((editor) => editor.read());
      if (decisions.includes(null)) return;
      answer(target, [dataPart({ decisions })], (words) => {
        const shown = editors.map((editor) => editor.refuse(words));
        if (!shown.includes(true)) refusal.textContent = words;
      });
    });
    box.append(send, refusal);
    return box;
  }

  // ------------------------------------------------------------------ composing

  function sendComposed() {
    const text = $("message-text").value;
    const dataText = $("message-data").value.trim();
    const parts = [];
    if (text.trim()) parts.push(textPart(text));
    if (dataText) {
      let data;
      try {
        data = JSON.parse(dataText);
      } catch (err) {
        showError(`The data part is not JSON: ${err.message}`);
        return;
      }
      parts.push(dataPart(data));
    }
    if (parts.length === 0) {
      showError("Write a text or a data part first.");
      return;
    }
    const message = { kind: "message", role: "user", messageId: newId(), parts };
    const contextId = $("context-id").value.trim();
    if (contextId) message.contextId = contextId;
    const agentId = $("agent").value;
    run("message/stream", { message, metadata: agentId ? { agentId } : {} }, null, () => {
      logEntry("You", partsNode(parts), "from-user");
      $("message-text").value = "";
      $("message-data").value = "";
    });
  }

  function newContext() {
    if (memory.streaming !== null) memory.streaming.abort(); // stop following; the task is not canceled
    clearPending();
    memory.taskId = null;
    memory.contextId = null;
    memory.lastState = null;
    $("context-id").value = "";
    $("timeline").replaceChildren();
    $("log").replaceChildren();
    $("task-ids").textContent = "No task yet: the next message starts a new context.";
  }

  async function loadAgents() {
    const response = await request("/", { headers: { Accept: "application/json" } });
    if (!response.ok) throw new ShownError(`The agent list (GET /): ${await describeHttp(response)}`);
    const body = await readJson(response);
    const agents = body && Array.isArray(body.agents) ? body.agents : [];
    const select = $("agent");
    select.replaceChildren();
    for (const agent of agents) {
      if (!agent || typeof agent.id !== "string") continue;
      const option = el("option", { value: agent.id }, `${agent.name || agent.id} (${agent.id})`);
      option.dataset.description = typeof agent.description === "string" ? agent.description : "";
      select.append(option);
    }
    if (select.options.length === 0) showError("The server lists no agent (GET / has no \"agents\").");
    describeAgent();
  }

  function describeAgent() {
    const option = $("agent").selectedOptions[0];
    $("agent-description").textContent = option ? option.dataset.description : "";
  }

  // ------------------------------------------------------------------ reviewer view

  const REVIEWS_PER_PAGE = 20;

  function reviewerHeaders() {
    return { Authorization: `Bearer ${memory.reviewerToken}`, Accept: "application/json" };
  }

  async function loadReviews() {
    const typed = $("reviewer-token").value.trim();
    if (typed) memory.reviewerToken = typed;
    $("reviewer-token").value = "";
    if (!memory.reviewerToken) {
      showError("Enter the reviewer token first.");
      return;
    }
    $("reviewer-token").placeholder = "a token is kept in this page's memory";
    const list = $("reviews");
    list.replaceChildren();
    await appendReviews(list, "");
  }

  // One page of GET /reviews (the oldest drafts first); a button asks for the next one.
  async function appendReviews(list, pageToken) {
    const query = new URLSearchParams({ pageSize: String(REVIEWS_PER_PAGE) });
    if (pageToken) query.set("pageToken", pageToken);
    const path = `/reviews?${query}`;
    const response = await request(path, { headers: reviewerHeaders() });
    if (!response.ok) {
      if (response.status === 401) memory.reviewerToken = null;
      throw new ShownError(`Reviews (GET /reviews): ${await describeHttp(response)}`);
    }
    const body = await readJson(response);
    const reviews = body && Array.isArray(body.reviews) ? body.reviews : [];
    if (reviews.length === 0 && !pageToken) list.append(el("li", { className: "hint", text: "No draft waits for a reviewer." }));
    for (const review of reviews) list.append(reviewItem(review));
    const next = body && typeof body.nextPageToken === "string" ? body.nextPageToken : "";
    if (!next) return;
    const more = el("button", { type: "button", id: "reviews-more" }, "Show more drafts");
    const holder = el("li", { className: "hint" }, more);
    more.addEventListener("click", async () => {
      holder.remove();
      try {
        await appendReviews(list, next);
      } catch (err) {
        report(err);
      }
    });
    list.append(holder);
  }

  function reviewItem(review) {
    const id = String(review.id);
    const item = el("li", { className: "draft", "data-review-id": id });
    item.append(el("p", { className: "meta", text: `Draft ${id.slice(0, 8)} from ${review.agentId}, task ${String(review.taskId).slice(0, 8)}, created ${review.created}` }));
    if (review.expiresAt) item.append(el("p", { className: "meta", text: `Decide before ${review.expiresAt}` }));
    item.append(el("pre", { className: "draft-body", text: json(review.draft) }));
    const problem = el("p", { className: "field-error", role: "alert" });
    const fields = el("div");
    const editor = el("textarea", { rows: "6", className: "draft-editor" });
    editor.value = json(review.draft);
    const reason = el("input", { type: "text", className: "reject-reason" });
    const approve = el("button", { type: "button", className: "primary" }, "Approve draft");
    const edit = el("button", { type: "button" }, "Edit draft");
    const reject = el("button", { type: "button" }, "Reject draft");
    approve.addEventListener("click", () => decide(id, { type: "approve" }, problem));
    edit.addEventListener("click", () => {
      const send = el("button", { type: "button", className: "primary" }, "Send edited draft");
      send.addEventListener("click", () => {
        let edited;
        try {
          edited = JSON.parse(editor.value);
        } catch (err) {
          problem.textContent = `This is not JSON: ${err.message}`;
          return;
        }
        decide(id, { type: "edit", edited }, problem);
      });
      fields.replaceChildren(el("label", {}, "Edited draft (JSON)", editor), send);
    });
    reject.addEventListener("click", () => {
      const send = el("button", { type: "button", className: "primary" }, "Send rejection");
      send.addEventListener("click", () => {
        const body = { type: "reject" };
        if (reason.value.trim()) body.message = reason.value;
        decide(id, body, problem);
      });
      fields.replaceChildren(el("label", {}, "Why (the requester sees it)", reason), send);
    });
    item.append(el("div", {}, approve, edit, reject), fields, problem);
    return item;
  }

  async function decide(id, decision, problem) {
    problem.textContent = "";
    try {
      const response = await request(`/reviews/${encodeURIComponent(id)}/decision`, {
        method: "POST",
        headers: { ...reviewerHeaders(), "Content-Type": "application/json" },
        body: JSON.stringify(decision),
      });
      if (!response.ok) {
        const words = `The decision was refused: ${await describeHttp(response)}`;
        problem.textContent = words;
        showError(words);
        return;
      }
      const decided = await readJson(response);
      const by = decided && decided.decidedBy ? ` by ${decided.decidedBy}` : "";
      logEntry("Reviewer", el("p", { text: `Draft ${id.slice(0, 8)}: ${decision.type}${by}.` }), "");
      await loadReviews();
    } catch (err) {
      report(err);
    }
  }

  // ------------------------------------------------------------------ wiring

  function start() {
    $("send").addEventListener("click", sendComposed);
    $("new-context").addEventListener("click", newContext);
    $("agent").addEventListener("change", describeAgent);
    $("api-key-use").addEventListener("click", () => keyGiven(false));
    $("api-key-cancel").addEventListener("click", () => keyGiven(true));
    $("api-key").addEventListener("keydown", (event) => { if (event.key === "Enter") keyGiven(false); });
    $("reviews-load").addEventListener("click", () => loadReviews().catch(report));
    $("errors-clear").addEventListener("click", () => {
      $("error-list").replaceChildren();
      $("errors").hidden = true;
    });
    loadAgents().catch(report);
  }

  start();
})();
