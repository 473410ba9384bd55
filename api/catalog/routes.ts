import type { Route } from '../http/route';
import { authorRoutes } from './authors';
import { categoryRoutes } from './categories';
import { complaintRoutes } from './complaints';
import { effectRoutes } from './effects';
import { tagRoutes } from './tags';
import type { ThematicSearch } from './thematic-search';

/** The catalog's part of the route table; a thematic search backend is wired in here when one exists. */
export function catalogRoutes(options: { thematicSearch?: ThematicSearch } = {}): Route[] {
  return [...categoryRoutes, ...effectRoutes(options), ...tagRoutes, ...authorRoutes, ...complaintRoutes];
}
