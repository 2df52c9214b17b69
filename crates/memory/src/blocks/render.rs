//! The renderer: memory blocks → the agent's system-context section.
//!
//! Deterministic: pinned blocks first, then every other block, each group ordered by label (byte order). Each block
//! shows its label, description, permission, used/limit characters (and how far over budget) and its whole value.

use crate::blocks::block::MemoryBlock;
use std::fmt::Write as _;

/// Renders `blocks` as the memory section of a system prompt.
///
/// ```text
/// <memory_blocks>
/// These memory blocks persist across conversations. …
///
/// <block label="human" permission="read_write" chars="24/2000" pinned="true">
/// <description>Facts about the user</description>
/// <value>
/// The user's name is Alice
/// </value>
/// </block>
/// </memory_blocks>
/// ```
pub fn render_blocks(blocks: &[MemoryBlock]) -> String {
    let mut ordered: Vec<&MemoryBlock> = blocks.iter().collect();
    ordered.sort_by(|a, b| b.pinned.cmp(&a.pinned).then_with(|| a.label.as_bytes().cmp(b.label.as_bytes())));
    let mut out = String::from("<memory_blocks>\n");
    out.push_str(
        "These memory blocks persist across conversations. Edit them with update_memory, append_memory and \
         replace_in_memory; find older content with search_memory. `chars` is used/limit: the limit is a soft \
         budget, so condense a block that is over it.\n",
    );
    if ordered.is_empty() {
        out.push_str("\n(no memory blocks yet)\n");
    }
    for b in ordered {
        let over = b.over_budget_by().map(|n| format!(" over_budget_by=\"{n}\"")).unwrap_or_default();
        let _ = write!(
            out,
            "\n<block label=\"{}\" permission=\"{}\" chars=\"{}/{}\"{over} pinned=\"{}\">\n",
            b.label,
            b.permission.as_str(),
            b.chars(),
            b.char_limit,
            b.pinned
        );
        if let Some(d) = &b.description {
            let _ = writeln!(out, "<description>{d}</description>");
        }
        out.push_str("<value>\n");
        out.push_str(&b.value);
        if !b.value.is_empty() && !b.value.ends_with('\n') {
            out.push('\n');
        }
        out.push_str("</value>\n</block>\n");
    }
    out.push_str("</memory_blocks>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::blocks::block::Permission;
    use chrono::Utc;

    fn block(label: &str, value: &str, pinned: bool, limit: usize) -> MemoryBlock {
        MemoryBlock {
            label: label.into(),
            value: value.into(),
            description: Some(format!("about {label}")),
            permission: Permission::ReadWrite,
            char_limit: limit,
            pinned,
            created_at: Utc::now(),
            updated_at: Utc::now(),
        }
    }

    #[test]
    fn pinned_first_then_by_label_and_budget_shown() {
        let blocks = vec![
            block("zeta", "z", false, 10),
            block("alpha", "a", false, 10),
            block("persona", "p", true, 10),
            block("big", "0123456789xy", false, 10),
        ];
        let text = render_blocks(&blocks);
        let pos = |l: &str| text.find(&format!("label=\"{l}\"")).unwrap();
        assert!(pos("persona") < pos("alpha") && pos("alpha") < pos("big") && pos("big") < pos("zeta"));
        assert!(text.contains("chars=\"12/10\" over_budget_by=\"2\""), "{text}");
        assert!(text.contains("<description>about alpha</description>\n<value>\na\n</value>"));
        let mut reversed = blocks.clone();
        reversed.reverse();
        assert_eq!(render_blocks(&reversed), text);
    }
}
