/**
 * The contract of a run, shared by the workflows, the activities, the store and the API: types only (the runtime
 * constants are in constants.ts, the failures in failures.ts, the workflows' messages in messages.ts). Nothing in
 * src/contract/ uses Node or a client: the workflow sandbox imports it. Each type is declared once; the others here
 * are derived from it.
 */

import type { RUNNERS } from './constants';

/** The model providers a task may run on. */
export type Runner = (typeof RUNNERS)[number];

/** One item of a tool's result (spec/compat.md, "Module ABI"; activities/servlets/results.ts checks a servlet's against it). */
export type ContentItem = { type: 'text'; text: string } | { type: 'image'; data: string; mimeType: string };
export type ImageItem = Extract<ContentItem, { type: 'image' }>;

/** A tool's result, as servlets (and MCP servers) give it. */
export interface CallToolResult {
  content: ContentItem[];
  isError?: boolean;
}

export type RunStatus = 'pending' | 'running' | 'ready' | 'error';

/** A run's identity: its owner, profile, task and name. Its workflow id and record `_id` are `runWorkflowId` of it. */
export interface RunIdentity {
  owner: string;
  profile: string;
  task: string;
  run: string;
}

/**
 * A text that may be too large for Temporal history: inline when small, else a reference to where it is stored
 * (MongoDB, `run_blobs`). Activities store what they produce and hand out references; the API resolves them.
 */
export type Text = string | ContentRef;

export interface ContentRef {
  /** The blob's id: `<workflow id>#<unique key>`, so a run's contents are found and deleted with it. */
  ref: string;
  /** UTF-8 bytes of the text. */
  bytes: number;
  /** Parts the text is stored in (each part one document well under MongoDB's limit). */
  parts: number;
}

/** Retry of provider calls: the workflow waits (status `pending`) between attempts. */
export interface RetrySettings {
  initialMs: number;
  maxMs: number;
  maxAttempts: number;
}

export interface RunLimits {
  timeoutMs: number;
  maxTurns: number;
  retry: RetrySettings;
  providerHeartbeatMs: number;
  providerCallMs: number;
  /** Continue as new once history has this many events; 0: when Temporal suggests it. */
  continueAsNewEvents: number;
  /** Input plus output tokens the run may use over all its model calls; null: no budget. */
  maxTotalTokens?: number | null;
  /** INPUT_TIMEOUT_S: how long a question of an MCP server waits for a person's answer (absent in runs started before it: 24 h). */
  inputTimeoutMs?: number;
  /**
   * RUN_START_WRITE_DELAY_MS: how long the run's first model call may take before the workflow records the run
   * `running` with its prompt (absent in runs started before 2026-11-28, whose first call wrote it: 250 ms).
   */
  startWriteDelayMs?: number;
}

/** What a run used, as the providers report it: the run object's `usage`. */
export interface RunUsage {
  input_tokens: number;
  output_tokens: number;
  model_calls: number;
  tool_calls: number;
}

/** Where a replay's tool calls get their results (docs/replays.md, "Modes"). */
export type ReplayTools = 'recorded' | 'live' | 'recorded_then_live';

/** What a replay changes of its original run; absent fields: the original's. */
export interface ReplayOverrides {
  runner?: string;
  model?: string;
  /** A prompt template used instead of the task version's. */
  prompt?: string;
  task_version?: number;
}

/** Workflow input: references and trigger data, never a secret, never large content. */
export interface RunInput {
  identity: RunIdentity;
  taskId: string;
  taskVersion: number;
  /** Trigger data when small; absent when it is large, and then read from the run record by the prepare step. */
  payload?: Record<string, unknown>;
  createdAt: number;
  limits: RunLimits;
  /** Present when the run continues as new: where the previous execution stopped. */
  resume?: RunResume;
  /** The task version's runner (the record's): the first model call's metrics name it before its preparation has read it. */
  runner: string;
  /**
   * The workflow is its record's one writer (runs triggered from 2026-11-28 on). Absent in runs triggered before: their
   * model calls record the run's start and end themselves, and they finish that way (run-steps.ts `RunParts.legacy`).
   */
  oneWriter?: true;
  /**
   * The first call's start timer (RUN_START_WRITE_DELAY_MS) is left to fire when the call answers sooner, not cancelled
   * (runs triggered from 2026-11-28 at noon on): a run that then ends needs no command for it (run-start.ts `recordWhenSlow`).
   */
  timerLeft?: true;
  /**
   * The first model call records the run's start with its end, through the recorder, when the model answers without
   * tool calls within the token budget (runs triggered from 2026-11-28, 14:00 on): one write and no workflow task of
   * the workflow's own for a quick run (run-start.ts `firstCall`, the first call's `endsRun`).
   */
  firstCallEnds?: true;
  /** The run is a replay (src/replays/): its preparation reads its record's replay settings (runs from 2026-11-28 on). */
  replay?: true;
}

/** What a run carries over when it continues as new (all of it small: contents stay in the store). */
export interface RunResume {
  deadline: number;
  /** The next turn's number. */
  turn: number;
  prepared: PreparedRun;
  /** Entries and messages recorded so far (all in the store). */
  entries: number;
  messages: number;
  /** Continuations so far (shown in logs and the Web UI). */
  continued: number;
  /** Usage so far. */
  usage: RunUsage;
  /** A replay's recorded tool results used so far, by call key (workflows/run-steps.ts `replayUsed`). */
  replayUsed?: Record<string, number>;
}

/** The contract's result entries. `C` is the content's type: text for clients, `Text` where it may be a reference. */
export interface LogEntry {
  msg: string;
  time: number;
  level: number;
}
export interface ExchangeEntry<C = string> {
  msg: string;
  exchange: { role: string; content: C };
  /** A replay's tool result taken from its original's recorded result (docs/replays.md); absent otherwise. */
  replayed?: true;
}
export interface LastEntry<C = string> {
  msg: string;
  lastMessage: { role: string; content: C };
  error?: string;
}
/**
 * A tool call waiting for a person's decision (tool approvals). `A`: the arguments as the model gave them; held as
 * their JSON (`Text`), shown to clients as the object.
 */
export interface ApprovalEntry<A = Record<string, unknown>> {
  msg: string;
  approval: { id: string; tool: string; arguments: A };
}
/**
 * A question an MCP server asks a person during a tool call (`elicitation/create`, docs/mcp.md "Inputs"): `schema`
 * (form mode) says what an answer's `content` must be; in URL mode the person is sent to `url` and answers without
 * content. `tool`: the name the model called (`<install>__<tool>`).
 */
export interface AskedInput {
  id: string;
  tool: string;
  message: string;
  schema?: Record<string, unknown>;
  url?: string;
}
export interface InputEntry {
  msg: string;
  input: AskedInput;
}
export type ResultEntry<C = string> = LogEntry | ExchangeEntry<C> | LastEntry<C> | ApprovalEntry<[C] extends [string] ? Record<string, unknown> : Text> | InputEntry;
/** An entry as the workflow, its history and the store hold it. */
export type HeldEntry = ResultEntry<Text>;

/** The `run` query's argument: the index of the first entry the caller does not have yet. */
export interface RunQueryInput {
  from?: number;
}

/**
 * What the `run` query returns: a bounded view of the live run. `entries` are the entries from index `from` on (at
 * most about a MiB of them); entries before the workflow's own first are in the store. `total` counts them all.
 */
export interface RunSnapshot {
  status: RunStatus;
  /** When the run was created (the record's `created_at`): a read can answer from the query alone. */
  createdAt: number;
  modifiedAt: number;
  total: number;
  from: number;
  entries: HeldEntry[];
  usage: RunUsage;
}

/** What the workflow returns: small on purpose (the results are in the store). */
export interface RunOutcome {
  status: RunStatus;
  entries: number;
  /** Its record was found closed, from outside the workflow (see run-steps.ts `RecordClosed`): the record says how it ended. */
  closedElsewhere?: true;
}

export interface ToolSpec {
  /** Name the model sees: unique within the run, provider-safe (`[A-Za-z0-9_-]{1,64}`). */
  name: string;
  description: string;
  inputSchema: Record<string, unknown>;
  install: string;
  tool: string;
  /** The installation's `settings.approval` names this tool (or is `"*"`): each call waits for a person's decision. */
  approval?: boolean;
  /** The install is a remote MCP server's (docs/mcp.md): its calls go to the MCP queue, not a servlet's sandbox. */
  mcp?: true;
  /** An MCP tool annotated `idempotentHint: true`: a call that may have reached the server may be made again. */
  idempotent?: true;
  /** An MCP tool the server runs as a task (`execution.taskSupport: "required"`): started, then followed on timers. */
  task?: true;
}

/** What the workflow needs of a tool: where a call of the name the model sees goes, whether it needs approval, and how it may be retried. */
export type ToolRoute = Pick<ToolSpec, 'name' | 'install' | 'tool' | 'approval' | 'mcp' | 'idempotent' | 'task'>;

export interface ToolCall<A = Record<string, unknown>> {
  id: string;
  name: string;
  arguments: A;
}

/**
 * The conversation with the model, one message per item, stored once (the record and `run_pages`) and loaded by the
 * provider activity: a model call is given the run and the number of messages, never the conversation itself.
 * A tool result whose content is one text is kept as that text; any other result as its JSON.
 */
export type Message<C = Text> =
  | { role: 'user'; text: C }
  | { role: 'assistant'; text: C; toolCalls: Array<ToolCall<C>> }
  | { role: 'tool'; callId: string; name: string; isError: boolean; text: C }
  | { role: 'tool'; callId: string; name: string; isError: boolean; json: C };

/**
 * A message as the provider mappers read it, its contents resolved and parsed. A user turn's `images` go with its text
 * (an MCP server's sampling request may send them; a run's prompt has none).
 */
export type Turn =
  | { role: 'user'; text: string; images?: ImageItem[] }
  | { role: 'assistant'; text: string; toolCalls: ToolCall[] }
  | { role: 'tool'; call: Pick<ToolCall, 'id' | 'name'>; result: CallToolResult };

export interface PreparedRun {
  runner: Runner;
  model: string;
  maxTokens: number | null;
  /** Where each tool name goes; the full specs (with schemas) travel as `toolSpecs`. */
  tools: ToolRoute[];
  /** JSON of the ToolSpec[] offered to the model (a reference when large: it is given to every model call). */
  toolSpecs: Text;
  /** A replay's source of tool results (absent: every call live, as in any run). */
  replayTools?: ReplayTools;
}

/** What a model call needs of the run's model, prepared once. */
export type ModelSettings = Pick<PreparedRun, 'runner' | 'model' | 'maxTokens' | 'toolSpecs'>;

/** A model call (activities/run-activities.ts `callModel`). */
export interface ModelCallInput {
  run: RunRef;
  taskId: string;
  taskVersion: number;
  model: ModelSettings;
  /** The conversation's length so far (messages the call reads from the store). */
  messages: number;
  /**
   * The prompt, message 0, when the store does not have it yet: the run's first call, made before the workflow has
   * recorded the run's start (it records it with the call's outcome). The call reads no message from the store then.
   */
  prompt?: Text;
  /** Index of the next entry (legacy: where the run's end goes when the call records it). */
  entriesFrom: number;
  /**
   * Legacy, runs started before 2026-11-28 (input without `oneWriter`): when the model answers without tool calls, the call
   * also records the run's end. The workflow of a later run records everything itself and sends false.
   */
  finish: boolean;
  /** Legacy, with `finish`: a call made again after one whose end the workflow did not hear checks the record first. */
  again?: boolean;
  /** The run's usage before this call (legacy: what the end records when this call writes it, with this call's added). */
  usage: RunUsage;
  /** The run's token budget: an answer that takes the run past it does not end the run here (the workflow fails it). */
  maxTotalTokens?: RunLimits['maxTotalTokens'];
}

/**
 * The run's first model call, which prepares the run first (`firstModelCall`; legacy `prepareAndCallModel`): the
 * model, the conversation (the prompt) and where the end's entry goes come from the preparation.
 */
export interface FirstModelCallInput extends Pick<ModelCallInput, 'run' | 'taskId' | 'taskVersion' | 'usage' | 'maxTotalTokens'> {
  identity: RunIdentity;
  /** Trigger data when small; else the preparation reads it from the run record. */
  payload?: Record<string, unknown>;
  /** When the run started (the entries' time: the same if the workflow prepares again). */
  at: number;
  /** The task version's runner (the record's), for the call's metrics before the preparation has read it. */
  runner: string;
  /** The run is a replay (RunInput `replay`): its preparation applies its record's replay settings. */
  replay?: true;
  /**
   * `firstModelCall`: an answer without tool calls, within `maxTotalTokens`, ends the run here: the call records the
   * run's start with its end (one write, the recorder's, while the record is open) and answers with `finishedAt`.
   */
  endsRun?: true;
}

/**
 * The first call's answer with what the preparation found (`firstModelCall`: for the workflow to record, unless
 * `finishedAt`: the call recorded the run's start with its end; legacy `prepareAndCallModel`: recorded by the call,
 * with the run's end when `finishedAt`); or `unprepared`: preparing
 * failed, the model was not asked, and the workflow prepares the run on its own (a local activity, with its retries).
 * A template's failure (TEMPLATE_FAILURES) is thrown instead: it is the run's end.
 */
export type FirstModelCall = { unprepared: true } | (ModelTurn & { finishedAt?: number; started: StartedRun });

/**
 * What preparing a run found: its inputs, and its first entries (the last of them the prompt) at `at`; `prompt`, the
 * conversation's message 0 (absent in results recorded before 2026-11-28). `firstModelCall` and `prepareStart` leave
 * recording them to the workflow; legacy `prepareRun` has recorded them (`running`).
 */
export interface StartedRun {
  prepared: PreparedRun;
  entries: HeldEntry[];
  at: number;
  prompt?: Text;
}

/** Which run a stored content belongs to, for an activity that stores what it produces. */
export interface RunRef {
  /** The workflow id (= the run record's _id). */
  id: string;
  /** The run's creation time: with the id, unique even when a deleted run's name is used again. */
  createdAt: number;
}

/** A model's answer as the workflow gets it: large parts already stored, references in their place. */
export interface ModelTurn {
  /** Tokens this call used, as the provider reported them. */
  usage: { input: number; output: number };
  text: Text;
  toolCalls: Array<ToolCall<Text> & { /** The call as its result entry shows it: `{"tool","arguments"}`. */ shown: Text }>;
  /** The call wrote the run's text document (the run was followed): the workflow's next record write clears it. */
  streamed?: true;
}

/** A tool's result as the workflow gets it. */
export interface ToolOutcome {
  isError: boolean;
  /** The conversation's form of the result (see Message). */
  message: { text: Text } | { json: Text };
  /** The result as its entry shows it (the texts, an image as `[image <type>]`). */
  shown: Text;
  /** What the tool said while it ran (an MCP server's progress and log messages), as log entries: bounded. */
  said?: HeldEntry[];
  /** What its MCP server's sampling requests used of the run's model: counted in the run's usage and token budget. */
  sampled?: SampledUsage;
  /** A replay's call answered from its original's recorded result (docs/replays.md): the tool was not called. */
  replayed?: true;
}

/** Provider calls an MCP server's sampling requests made during one tool call (docs/mcp.md, "Sampling"), and their tokens. */
export interface SampledUsage {
  input: number;
  output: number;
  calls: number;
}

/**
 * What an MCP tool call needs to answer its server's sampling requests with the run's own model: the task version (its
 * provider key), the model, and the run's usage before the call with its budget, past which sampling is refused.
 */
export interface SamplingInput extends Pick<ModelCallInput, 'taskId' | 'taskVersion' | 'usage' | 'maxTotalTokens'> {
  model: Pick<PreparedRun, 'runner' | 'model' | 'maxTokens'>;
}

/** `POST <run path>/cancel`: who asked. */
export interface CancelRequest {
  by: string;
}

/** `POST <run path>/approvals/:id`: a person's decision on a tool call waiting for approval. */
export interface ApprovalDecision {
  id: string;
  approve: boolean;
  reason?: string;
  by: string;
}

/** How a person (or the run, for them) answered an MCP server's question: the server gets `action` and `content`. */
export type InputAction = 'accept' | 'decline' | 'cancel';

/**
 * `POST <run path>/inputs/:id`: the answer to a question the run asked (`content` only with `accept`, fitting the
 * question's schema: the API checks it). `by`: who answered (a user, or the run itself: see `reason`).
 */
export interface InputAnswer {
  id: string;
  action: InputAction;
  content?: Record<string, unknown>;
  by: string;
  /** Why the run answered for the person (the call ended, no answer in time): its entry says so. */
  reason?: string;
}

/** A question the run asked, as the `inputState` query gives it: the answer once there is one. */
export interface InputState {
  asked: AskedInput;
  answer?: Pick<InputAnswer, 'action' | 'content'>;
}

/** Details of a provider failure the workflow may retry (ApplicationFailure details[0]). */
export interface ProviderFailureDetails {
  status?: number;
  retryAfterMs?: number;
}
