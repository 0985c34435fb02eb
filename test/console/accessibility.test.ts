import { expect } from 'chai';
import { checkAccessibility, useBrowser } from '../helpers/browser';
import { servePages, type PageServer } from './page-server';
import { CONSOLE_CSP } from './csp';

const page = (body: string) => `<!doctype html><html lang="en"><head><title>A page</title></head><body><main>${body}</main></body></html>`;

/** What the error of a scan that failed says. */
async function scanError(check: Promise<void>): Promise<string> {
  const err = await check.then(
    () => undefined,
    (e: Error) => e,
  );
  expect(err, 'the scan found no serious or critical violation').to.be.instanceOf(Error);
  return err!.message;
}

describe('the accessibility scan of the browser tests', () => {
  const b = useBrowser();
  let server: PageServer;
  before(async () => {
    server = await servePages({
      '/named': { body: page('<h1>Runs</h1><button type="button">Approve</button>'), headers: { 'content-security-policy': CONSOLE_CSP } },
      '/unnamed': { body: page('<h1>Runs</h1><button type="button"></button>'), headers: { 'content-security-policy': CONSOLE_CSP } },
    });
  });
  after(() => server?.close());

  it('passes a page whose buttons and images are named', async () => {
    await b.page.goto(`data:text/html,${encodeURIComponent(page('<h1>Tasks</h1><img src="data:image/gif;base64,R0lGODlhAQABAAAAACw=" alt="logo"><button type="button">Create task</button>'))}`);
    await checkAccessibility(b.page);
  });

  it('fails on a button without a name and an image without a text alternative, naming the rules and the elements', async () => {
    await b.page.goto(`data:text/html,${encodeURIComponent(page('<h1>Tasks</h1><img src="data:image/gif;base64,R0lGODlhAQABAAAAACw="><button type="button"></button>'))}`);
    const message = await scanError(checkAccessibility(b.page));
    expect(message).to.match(/^2 serious or critical accessibility violation\(s\) on data:text\/html/);
    expect(message).to.contain('critical button-name: Buttons must have discernible text');
    expect(message).to.contain('critical image-alt: Images must have alternative text');
    expect(message).to.contain('<button type="button"></button>');
  });

  it('scans pages served with the console\'s Content-Security-Policy, which allows no script of the scanner\'s', async () => {
    await b.page.goto(`${server.url}/named`);
    await checkAccessibility(b.page);
    await b.page.goto(`${server.url}/unnamed`);
    expect(await scanError(checkAccessibility(b.page))).to.contain('button-name');
  });
});
