import type { ProviderKind } from '../../common/model-route';
import { hasRouteFor } from '../../db/catalog/offered';

/**
 * SQL fragments shared by every list of the catalog, so "available" and "catalog order" mean the
 * same thing in the flat list, a category, search, the counts and the author page.
 */

/** A page of effect ids in list order, with the count of the whole list. */
export interface IdPage {
  ids: string[];
  total: number;
}

/** Resolved list filters (ids); null is no filter. */
export interface EffectFilters {
  categoryId: string | null;
  tagId: string | null;
}

/**
 * Catalog rule 1: an effect is listed only while it sits in at least one enabled category, and
 * never once a moderator hid it (`effects.listed`, kept by triggers); and only while a provider kind
 * with an account here can run it (`offered`: `offeredKinds` of pool/model-routes.ts), the same for
 * every caller, so cached answers stay shared. `effect` is the alias.
 */
export function availableEffect(effect: string, offered: readonly ProviderKind[]): string {
  return `(${effect}.listed and ${hasRouteFor(effect, offered)})`;
}

/**
 * Catalog rule 2: `category` matches any of an effect's categories; `category` and `tag` combine.
 * `effectId` is the expression of the effect's id; takes the bindings `:categoryId` and `:tagId`.
 */
export function filterConditions(effectId: string): string {
  return `${inCategory(effectId)} and ${withTag(effectId)}`;
}

function inCategory(effectId: string): string {
  return `(:categoryId::uuid is null or exists (
    select 1 from effect_categories in_category where in_category.effect_id = ${effectId} and in_category.category_id = :categoryId))`;
}

export function withTag(effectId: string): string {
  return `(:tagId::uuid is null or exists (
    select 1 from effect_tags with_tag where with_tag.effect_id = ${effectId} and with_tag.tag_id = :tagId))`;
}

/**
 * The curated order of the flat list: the operator's positions, with effects demoted by complaints
 * sinking to the end. Search keeps this order between equally ranked effects.
 */
export function curatedOrder(effect: string): string {
  return `${effect}.demoted_at is not null, ${effect}.position, ${effect}.created_at, ${effect}.id`;
}

/**
 * Catalog rule 3, the order inside one category: operator-pinned-top (by their rank), then the
 * newest effects in `:newEffectSlots` slots (those that came in the last `:newEffectDays` days),
 * then by successful generations, then operator-pinned-bottom, and last the effects demoted by
 * complaints (even a pinned one: a moderator must look at it before it is shown first again).
 * Equal places keep the curated order.
 *
 * Selects `effect_id` and `rank` for the available effects of the enabled category `:categoryId`.
 */
export const categoryPlacement = (offered: readonly ProviderKind[]) => `
  with candidate as (
    select ec.effect_id, ec.pinned_top, ec.pinned_bottom, ec.new_since,
      e.success_count, e.demoted_at, e.position, e.created_at,
      coalesce(ec.new_since > now() - make_interval(days => :newEffectDays), false)
        and ec.pinned_top is null and ec.pinned_bottom is null and e.demoted_at is null as is_new
    from effect_categories ec join effects e on e.id = ec.effect_id
    where ec.category_id = :categoryId and ${availableEffect('e', offered)}
  ),
  tiered as (
    select candidate.*, case
        when demoted_at is not null then 4
        when pinned_top is not null then 0
        when pinned_bottom is not null then 3
        when is_new and row_number() over (partition by is_new order by new_since desc, position, effect_id) <= :newEffectSlots then 1
        else 2
      end as tier
    from candidate
  )
  select effect_id, row_number() over (order by
      tier,
      case tier when 0 then pinned_top when 3 then pinned_bottom end,
      case when tier = 1 then new_since end desc,
      case when tier = 2 then success_count end desc,
      position, created_at, effect_id) as rank
  from tiered`;
