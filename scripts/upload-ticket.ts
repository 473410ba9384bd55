/** What a mobile client does with an upload ticket: a multipart POST with every field unchanged and the file last. */
export async function postToTicket(ticket: { url: string; fields: Record<string, string> }, body: Buffer, contentType: string): Promise<number> {
  return (await submitToTicket(ticket, body, contentType)).status;
}

/** The same POST, answering the status and, for a refusal, S3's error code (`<Code>` of its XML). */
export async function submitToTicket(ticket: { url: string; fields: Record<string, string> }, body: Buffer, contentType: string): Promise<{ status: number; code: string | null }> {
  const form = new FormData();
  for (const [name, value] of Object.entries(ticket.fields)) form.append(name, value);
  form.append('file', new Blob([body], { type: contentType }), 'photo');
  const response = await fetch(ticket.url, { method: 'POST', body: form });
  return { status: response.status, code: s3ErrorCode(await response.text()) };
}

/** The `<Code>` of an S3 error answer, or null. */
export function s3ErrorCode(xml: string): string | null {
  return /<Error>\s*<Code>([^<]+)<\/Code>/.exec(xml)?.[1] ?? null;
}
