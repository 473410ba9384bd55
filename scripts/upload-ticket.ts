/** What a mobile client does with an upload ticket: a multipart POST with every field unchanged and the file last. */
export async function postToTicket(ticket: { url: string; fields: Record<string, string> }, body: Buffer, contentType: string): Promise<number> {
  const form = new FormData();
  for (const [name, value] of Object.entries(ticket.fields)) form.append(name, value);
  form.append('file', new Blob([body], { type: contentType }), 'photo');
  const response = await fetch(ticket.url, { method: 'POST', body: form });
  await response.arrayBuffer();
  return response.status;
}
