import type { Message, Part } from '@a2a-js/sdk';
import { RequestMalformedError } from '@a2a-js/sdk/errors';
import type { Principal } from '../access/principal';
import type { FilesService } from '../files/files.service';

/** `metadata` key of a SendMessage whose value is the task's max_credits. */
export const MAX_CREDITS_METADATA = 'gatehouse/max_credits';

/** What a message becomes as a task: its instruction, its attachments and its credit ceiling. */
export interface TaskInput {
  instruction: string;
  /** Files of the organization the message named by URL. */
  attachments: string[];
  /** Files the message carried inline, to store (storeInlineFiles) once the task is known valid. */
  inline: { filename: string; contentType: string; bytes: Buffer }[];
  maxCredits?: number;
}

/**
 * A SendMessage as a task of the agent (CONTRACT, "Agents for other agents: A2A"): the text parts joined
 * with a newline are the instruction; a file part is an attachment, either inline bytes (stored as an
 * upload of the organization, as MCP's upload_file does) or the `url` of one of the organization's files
 * (`<PUBLIC_URL>/v1/files/{id}/content`); any other URL, and data parts, are refused: nothing is
 * fetched on a client's behalf. Nothing is stored here, so bad input leaves nothing behind.
 */
export async function taskInputOf(
  message: Message | undefined,
  metadata: Record<string, unknown> | undefined,
  principal: Principal,
  files: FilesService,
  publicUrl: string,
): Promise<TaskInput> {
  if (!message) throw new RequestMalformedError('The request has no message.');
  if (message.taskId) {
    throw new RequestMalformedError(
      'A message to an existing task is not taken: a Gatehouse task takes no further input; send a new message (the same contextId keeps the conversation).',
    );
  }
  const texts: string[] = [];
  const fileIds: string[] = [];
  const inline: Part[] = [];
  const filesUrl = `${publicUrl}/v1/files/`;
  for (const part of message.parts) {
    const content = part.content;
    if (content?.$case === 'text') texts.push(content.value);
    else if (content?.$case === 'raw') inline.push(part);
    else if (content?.$case === 'url') {
      const match = content.value.startsWith(filesUrl)
        ? /^([^/?#]+)\/content$/.exec(content.value.slice(filesUrl.length))
        : null;
      if (!match) {
        throw new RequestMalformedError(
          `A file part's url must be ${filesUrl}{id}/content, a file of this organization (uploaded with POST /v1/files).`,
        );
      }
      fileIds.push(match[1]);
    } else {
      throw new RequestMalformedError(
        'Only text and file parts are taken (a data part has no place in a task).',
      );
    }
  }
  const instruction = texts.join('\n');
  if (!instruction.trim())
    throw new RequestMalformedError('The message has no text: the instruction is its text parts.');
  const maxCredits = maxCreditsOf(metadata ?? message.metadata);
  // Checked before any inline file is stored: a refused request leaves nothing behind.
  const owned = await files.findOwned(principal.organizationId, fileIds);
  const missing = fileIds.find((id) => !owned.some((file) => file.id === id));
  if (missing) throw new RequestMalformedError(`The file ${missing} is not a file of this organization.`);
  return {
    instruction,
    attachments: fileIds,
    inline: inline.map((part) => ({
      filename: part.filename || 'attachment',
      contentType: part.mediaType || 'application/octet-stream',
      bytes: Buffer.from((part.content as { value: Uint8Array }).value),
    })),
    ...(maxCredits !== undefined ? { maxCredits } : {}),
  };
}

/** Stores the inline files as uploads of the organization; their ids, in the message's order. */
export async function storeInlineFiles(
  input: TaskInput,
  principal: Principal,
  files: FilesService,
): Promise<string[]> {
  const ids: string[] = [];
  for (const file of input.inline) ids.push((await files.store(principal, file)).id);
  return ids;
}

function maxCreditsOf(metadata: Record<string, unknown> | undefined): number | undefined {
  const value = metadata?.[MAX_CREDITS_METADATA];
  if (value === undefined) return undefined;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0) {
    throw new RequestMalformedError(
      `metadata["${MAX_CREDITS_METADATA}"] must be a whole number of credits, 0 or more.`,
    );
  }
  return value;
}
